// taras_native: what Node has no API for. The peer's uid/gid/pid of a
// connected Unix socket (SO_PEERCRED: the kernel's word, taken when the peer
// called connect) and the NSS user and group databases (getpwuid_r,
// getpwnam_r, getgrouplist), so a verified uid becomes a name and groups.
// N-API in plain C: no dependency, built by node-gyp at `npm install`.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#include <node_api.h>

#define CHECK(call) do { if ((call) != napi_ok) { napi_throw_error(env, NULL, "N-API call failed: " #call); return NULL; } } while (0)

static napi_value throw_errno(napi_env env, const char *what, int err) {
  char message[256];
  snprintf(message, sizeof message, "%s: %s", what, strerror(err));
  napi_throw_error(env, NULL, message);
  return NULL;
}

static int arg_int(napi_env env, napi_callback_info info, size_t want, int64_t *out) {
  size_t argc = want;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) return -1;
  for (size_t i = 0; i < want; i++) if (napi_get_value_int64(env, argv[i], &out[i]) != napi_ok) return -1;
  return 0;
}

static napi_value set_number(napi_env env, napi_value object, const char *key, double value) {
  napi_value v;
  if (napi_create_double(env, value, &v) != napi_ok) return NULL;
  if (napi_set_named_property(env, object, key, v) != napi_ok) return NULL;
  return object;
}

static napi_value set_string(napi_env env, napi_value object, const char *key, const char *value) {
  napi_value v;
  if (napi_create_string_utf8(env, value ? value : "", NAPI_AUTO_LENGTH, &v) != napi_ok) return NULL;
  if (napi_set_named_property(env, object, key, v) != napi_ok) return NULL;
  return object;
}

/* peerCred(fd) -> {uid, gid, pid} */
static napi_value peer_cred(napi_env env, napi_callback_info info) {
  int64_t fd;
  if (arg_int(env, info, 1, &fd) != 0) { napi_throw_type_error(env, NULL, "peerCred(fd): fd must be an integer"); return NULL; }
  struct ucred cred;
  socklen_t length = sizeof cred;
  if (getsockopt((int)fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return throw_errno(env, "getsockopt(SO_PEERCRED)", errno);
  napi_value result;
  CHECK(napi_create_object(env, &result));
  if (!set_number(env, result, "uid", cred.uid) || !set_number(env, result, "gid", cred.gid) || !set_number(env, result, "pid", cred.pid)) return NULL;
  return result;
}

static napi_value passwd_object(napi_env env, const struct passwd *pw) {
  napi_value result;
  CHECK(napi_create_object(env, &result));
  if (!set_string(env, result, "name", pw->pw_name) || !set_number(env, result, "uid", pw->pw_uid) || !set_number(env, result, "gid", pw->pw_gid)
      || !set_string(env, result, "home", pw->pw_dir) || !set_string(env, result, "shell", pw->pw_shell)) return NULL;
  return result;
}

/* Calls getpwuid_r or getpwnam_r with a growing buffer; null when there is no such user. */
static napi_value lookup_passwd(napi_env env, int by_name, uid_t uid, const char *name) {
  size_t size = 1024;
  for (;;) {
    char *buffer = malloc(size);
    if (buffer == NULL) return throw_errno(env, "malloc", ENOMEM);
    struct passwd entry, *found = NULL;
    int err = by_name ? getpwnam_r(name, &entry, buffer, size, &found) : getpwuid_r(uid, &entry, buffer, size, &found);
    if (err == ERANGE && size < (1 << 20)) { free(buffer); size *= 4; continue; }
    napi_value result;
    if (err != 0 && err != ENOENT && err != ESRCH && err != EBADF && err != EPERM) { free(buffer); return throw_errno(env, "user lookup", err); }
    if (found == NULL) { free(buffer); CHECK(napi_get_null(env, &result)); return result; }
    result = passwd_object(env, found);
    free(buffer);
    return result;
  }
}

/* userById(uid) -> {name, uid, gid, home, shell} | null */
static napi_value user_by_id(napi_env env, napi_callback_info info) {
  int64_t uid;
  if (arg_int(env, info, 1, &uid) != 0 || uid < 0 || uid > 0xfffffffeLL) { napi_throw_type_error(env, NULL, "userById(uid): uid must be a non-negative integer"); return NULL; }
  return lookup_passwd(env, 0, (uid_t)uid, NULL);
}

static char *string_arg(napi_env env, napi_value value) {
  size_t length;
  if (napi_get_value_string_utf8(env, value, NULL, 0, &length) != napi_ok || length > 4096) return NULL;
  char *text = malloc(length + 1);
  if (text == NULL) return NULL;
  if (napi_get_value_string_utf8(env, value, text, length + 1, &length) != napi_ok) { free(text); return NULL; }
  if (strlen(text) != length) { free(text); return NULL; } /* an embedded NUL */
  return text;
}

/* The one string argument of userByName and groupByName; NULL after throwing `usage`. */
static char *one_string_arg(napi_env env, napi_callback_info info, const char *usage) {
  size_t argc = 1;
  napi_value argv[1];
  char *text = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc >= 1) text = string_arg(env, argv[0]);
  if (text == NULL) napi_throw_type_error(env, NULL, usage);
  return text;
}

/* userByName(name) -> {name, uid, gid, home, shell} | null */
static napi_value user_by_name(napi_env env, napi_callback_info info) {
  char *name = one_string_arg(env, info, "userByName(name): name must be a string without NUL");
  if (name == NULL) return NULL;
  napi_value result = lookup_passwd(env, 1, 0, name);
  free(name);
  return result;
}

/* groupsOf(name, gid) -> [gid, ...] (getgrouplist: the primary group and every supplementary one) */
static napi_value groups_of(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int64_t gid;
  char *name = argc < 2 ? NULL : string_arg(env, argv[0]);
  if (name == NULL || napi_get_value_int64(env, argv[1], &gid) != napi_ok) { free(name); napi_throw_type_error(env, NULL, "groupsOf(name, gid)"); return NULL; }
  int count = 64;
  gid_t *groups = NULL;
  for (;;) {
    gid_t *grown = realloc(groups, sizeof(gid_t) * (size_t)count);
    if (grown == NULL) { free(groups); free(name); return throw_errno(env, "malloc", ENOMEM); }
    groups = grown;
    int want = count;
    if (getgrouplist(name, (gid_t)gid, groups, &want) >= 0) { count = want; break; }
    if (want <= count || want > 65536) { free(groups); free(name); return throw_errno(env, "getgrouplist", ERANGE); }
    count = want;
  }
  free(name);
  napi_value result;
  if (napi_create_array_with_length(env, (size_t)count, &result) != napi_ok) { free(groups); return NULL; }
  for (int i = 0; i < count; i++) {
    napi_value v;
    if (napi_create_double(env, groups[i], &v) != napi_ok || napi_set_element(env, result, (uint32_t)i, v) != napi_ok) { free(groups); return NULL; }
  }
  free(groups);
  return result;
}

/* groupByName(name) -> gid | null */
static napi_value group_by_name(napi_env env, napi_callback_info info) {
  char *name = one_string_arg(env, info, "groupByName(name): name must be a string without NUL");
  if (name == NULL) return NULL;
  int known = 0, err = 0;
  gid_t gid = 0;
  for (size_t size = 4096;; size *= 4) {
    char *buffer = malloc(size);
    if (buffer == NULL) { err = ENOMEM; break; }
    struct group entry, *found = NULL;
    err = getgrnam_r(name, &entry, buffer, size, &found);
    if (found != NULL) { known = 1; gid = found->gr_gid; }
    free(buffer);
    if (err != ERANGE || size >= (1 << 22)) break;
  }
  free(name);
  if (err == ENOMEM) return throw_errno(env, "malloc", ENOMEM);
  napi_value result;
  if (known) CHECK(napi_create_double(env, gid, &result));
  else CHECK(napi_get_null(env, &result));
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
    { "peerCred", NULL, peer_cred, NULL, NULL, NULL, napi_default, NULL },
    { "userById", NULL, user_by_id, NULL, NULL, NULL, napi_default, NULL },
    { "userByName", NULL, user_by_name, NULL, NULL, NULL, napi_default, NULL },
    { "groupsOf", NULL, groups_of, NULL, NULL, NULL, napi_default, NULL },
    { "groupByName", NULL, group_by_name, NULL, NULL, NULL, napi_default, NULL },
  };
  if (napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
