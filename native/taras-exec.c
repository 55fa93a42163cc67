// taras-exec: the last step between the job supervisor (root) and a job, as
// slurmstepd does it. The supervisor starts it with an empty environment and
// fixed arguments it took from the passwd entry (never from the job), so
// nothing the submitter controls (LD_PRELOAD, LD_LIBRARY_PATH, BASH_ENV, a
// path) is used while it is root. It reads the launch description from fd 3,
// drops to the job's user FIRST (supplementary groups, gid, uid; then checks
// that root cannot be regained), and only then enters the working directory,
// sets the umask and opens the output files, all as the user: the kernel
// decides what the user may do, so a path checked is a path used. Output files
// are opened with O_NOFOLLOW|O_NONBLOCK and must be regular files the user owns
// (a planted symlink, FIFO, device or another user's 0666 file is refused).
// Then it execs the job's shell with the job's environment: its pid is the
// job's. Any failure before the exec is written to the CLOEXEC error pipe on
// fd 4 (one line, the exact reason) and ends it with 126 (127: the exec
// itself failed); an empty pipe at EOF means the exec happened. fd 5, when
// open, is the cgroup gate the job's wrapper reads: it becomes fd 3.
//
// Usage: taras-exec [MODE] --user UID GID NAME   (NAME "-": no passwd entry: primary group only)
//        taras-exec [MODE] --self                (the supervisor's own ids: no change)
// MODE (interactive jobs; absent: a batch job, output to files, stdin /dev/null):
//   --stdio       stdin, stdout and stderr stay what the supervisor gave (pipes);
//                 the output paths of the description are not opened.
//   --pty FILE    started by node-pty on a terminal (fds 0-2, the controlling
//                 tty): the description is read from FILE (opened as root
//                 before the drop: a root-owned file in the job directory the
//                 supervisor names, never a path of the job's), there is no
//                 error pipe (a failure is one line on the terminal, exit 126),
//                 and it stops itself (SIGSTOP) first, so the supervisor can move
//                 it into the job's cgroup before anything runs, then SIGCONTs it.
// Description on fd 3: NUL-terminated strings: "taras-exec 1", working
// directory, stdout path, stderr path, umask (octal), "append" | "truncate",
// script to check readable ("" for none), N, N environment entries, M, M argv
// entries (argv[0] is the program executed).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#define DESCRIPTION_FD 3
#define ERROR_FD 4
#define GATE_FD 5
#define MAX_DESCRIPTION (64 * 1024 * 1024)

static char label[512] = "uid ?";
/** Where fail() writes: the error pipe, or the terminal in --pty mode. */
static int error_fd = ERROR_FD;
static int pty_mode = 0;

/** Reports why the job cannot start on the error pipe, and exits. */
static void fail(int code, const char *format, ...) {
  char message[8192];
  va_list args;
  va_start(args, format);
  int length = vsnprintf(message, sizeof message, format, args);
  va_end(args);
  if (length < 0) length = 0;
  if ((size_t) length >= sizeof message) length = sizeof message - 1;
  if (pty_mode) {
    // On the user's terminal: one line, the raw terminal needs CR LF.
    ssize_t ignored = write(error_fd, "taras: ", 7);
    ignored = write(error_fd, message, (size_t) length);
    ignored = write(error_fd, "\r\n", 2);
    (void) ignored;
    _exit(code);
  }
  ssize_t written = write(error_fd, message, (size_t) length);
  if (written < 0) {
    // No supervisor to tell: stderr is all there is.
    fprintf(stderr, "taras-exec: %s\n", message);
  }
  _exit(code);
}

static const char *errno_name(int err) {
  switch (err) {
    case EACCES: return "EACCES";
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case ELOOP: return "ELOOP";
    case ENXIO: return "ENXIO";
    case EPERM: return "EPERM";
    case EROFS: return "EROFS";
    case ENOSPC: return "ENOSPC";
    case EISDIR: return "EISDIR";
    case EDQUOT: return "EDQUOT";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EMFILE: return "EMFILE";
    case ETXTBSY: return "ETXTBSY";
    default: return "error";
  }
}

static char *description;
static size_t description_length;
static size_t cursor;

static void read_description(void) {
  size_t capacity = 65536;
  description = malloc(capacity);
  if (description == NULL) fail(126, "taras-exec: out of memory");
  for (;;) {
    if (description_length == capacity) {
      if (capacity >= MAX_DESCRIPTION) fail(126, "taras-exec: the launch description is larger than %d bytes", MAX_DESCRIPTION);
      capacity *= 2;
      char *grown = realloc(description, capacity);
      if (grown == NULL) fail(126, "taras-exec: out of memory");
      description = grown;
    }
    ssize_t got = read(DESCRIPTION_FD, description + description_length, capacity - description_length);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(126, "taras-exec: cannot read the launch description on fd %d: %s", DESCRIPTION_FD, strerror(errno));
    if (got == 0) break;
    description_length += (size_t) got;
  }
  close(DESCRIPTION_FD);
}

static char *next_string(const char *what) {
  if (cursor >= description_length) fail(126, "taras-exec: the launch description ends before the %s", what);
  char *start = description + cursor;
  char *end = memchr(start, '\0', description_length - cursor);
  if (end == NULL) fail(126, "taras-exec: the launch description's %s is not NUL-terminated", what);
  cursor = (size_t) (end - description) + 1;
  return start;
}

/* A whole number from 0 to max written in `base`, or -1. */
static long parse_number(const char *text, int base, long max) {
  char *end;
  errno = 0;
  long value = strtol(text, &end, base);
  return *text == '\0' || *end != '\0' || errno != 0 || value < 0 || value > max ? -1 : value;
}

static long next_number(const char *what, int base, long max) {
  char *text = next_string(what);
  long value = parse_number(text, base, max);
  if (value < 0) fail(126, "taras-exec: bad %s in the launch description: \"%s\"", what, text);
  return value;
}

static char **next_list(const char *what) {
  long count = next_number(what, 10, 1 << 20);
  char **list = calloc((size_t) count + 1, sizeof *list);
  if (list == NULL) fail(126, "taras-exec: out of memory");
  for (long i = 0; i < count; i++) list[i] = next_string(what);
  return list;
}

static long parse_id(const char *text, const char *what) {
  long value = parse_number(text, 10, 4294967294L); /* (uid_t) -1 means "unchanged" to setresuid */
  if (value < 0) fail(126, "taras-exec: bad %s \"%s\"", what, text);
  return value;
}

/** Supplementary groups, gid, uid, in that order (setgid needs root); then proves root is gone. */
static void drop_privileges(uid_t uid, gid_t gid, const char *name) {
  if (strcmp(name, "-") == 0) {
    if (setgroups(1, &gid) != 0) fail(126, "cannot set the groups of %s: %s", label, strerror(errno));
  } else if (initgroups(name, gid) != 0) {
    fail(126, "cannot set the supplementary groups of %s (initgroups): %s", label, strerror(errno));
  }
  if (setresgid(gid, gid, gid) != 0) fail(126, "cannot switch to gid %u for %s: %s", (unsigned) gid, label, strerror(errno));
  if (setresuid(uid, uid, uid) != 0) fail(126, "cannot switch to %s: %s", label, strerror(errno));
  uid_t ruid, euid, suid;
  gid_t rgid, egid, sgid;
  if (getresuid(&ruid, &euid, &suid) != 0 || ruid != uid || euid != uid || suid != uid
      || getresgid(&rgid, &egid, &sgid) != 0 || rgid != gid || egid != gid || sgid != gid) {
    fail(126, "taras-exec: the ids of %s did not all take effect", label);
  }
  if (uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) fail(126, "taras-exec: root could be regained after switching to %s; not starting the job", label);
}

static const char *file_type(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

/**
 * As the job's user: a regular file the user owns, created if missing (0666
 * less the umask); never through a symlink, never blocking on a FIFO.
 */
static int open_output(const char *path, int truncate, uid_t uid) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0666);
  if (fd < 0) {
    int err = errno;
    if (err == ELOOP) fail(126, "output file %s is a symbolic link: output is never written through one; remove it or choose another --output", path);
    if (err == ENXIO) {
      // A FIFO with no reader, or a device with nothing behind it (/dev/tty with no terminal): name what the path is.
      struct stat seen;
      const char *what = lstat(path, &seen) == 0 ? file_type(seen.st_mode) : "a device with nothing behind it";
      fail(126, "output file %s is %s: output goes only to regular files; remove it or choose another --output", path, what);
    }
    fail(126, "cannot open the job's output file %s as %s (%s: %s)", path, label, errno_name(err), strerror(err));
  }
  struct stat stats;
  if (fstat(fd, &stats) != 0) fail(126, "cannot stat the job's output file %s: %s", path, strerror(errno));
  // The null device (1,3) is what `--output /dev/null` means everywhere (sbatch too): nothing is written, nothing captured.
  int null_device = S_ISCHR(stats.st_mode) && major(stats.st_rdev) == 1 && minor(stats.st_rdev) == 3;
  if (!null_device) {
    if (!S_ISREG(stats.st_mode)) fail(126, "output file %s is %s: output goes only to regular files; remove it or choose another --output", path, file_type(stats.st_mode));
    if (stats.st_uid != uid) {
      fail(126, "output file %s belongs to uid %u, not to %s: a job never writes into another user's file; remove it or choose another --output",
           path, (unsigned) stats.st_uid, label);
    }
    // Another name for the same file (a hard link planted where the output goes) would get the output too.
    if (stats.st_nlink != 1) {
      fail(126, "output file %s has %lu hard links: output goes only to a file with one name; remove it or choose another --output",
           path, (unsigned long) stats.st_nlink);
    }
    if (truncate && ftruncate(fd, 0) != 0) fail(126, "cannot truncate the job's output file %s: %s", path, strerror(errno));
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) fail(126, "cannot make %s blocking: %s", path, strerror(errno));
  return fd;
}

static void move_fd(int from, int to, const char *what) {
  if (from == to) {
    int flags = fcntl(to, F_GETFD);
    if (flags < 0 || fcntl(to, F_SETFD, flags & ~FD_CLOEXEC) != 0) fail(126, "taras-exec: cannot keep %s open: %s", what, strerror(errno));
    return;
  }
  if (dup2(from, to) < 0) fail(126, "taras-exec: cannot set up %s: %s", what, strerror(errno));
}

int main(int argc, char **argv) {
  int stdio_mode = 0;
  const char *pty_description = NULL;
  if (argc >= 2 && strcmp(argv[1], "--stdio") == 0) {
    stdio_mode = 1;
    argc -= 1;
    argv += 1;
  } else if (argc >= 3 && strcmp(argv[1], "--pty") == 0) {
    pty_mode = 1;
    error_fd = 2;
    pty_description = argv[2];
    argc -= 2;
    argv += 2;
  }
  // --limit-as BYTES: the job's address space limit (ulimit -v), set just before the exec, so that nothing the job
  // runs (a preloaded library's constructor in the shell included) is without it.
  long limit_as = -1;
  if (argc >= 3 && strcmp(argv[1], "--limit-as") == 0) {
    limit_as = parse_number(argv[2], 10, LONG_MAX);
    if (limit_as <= 0) fail(126, "taras-exec: --limit-as needs a positive number of bytes, not %s", argv[2]);
    argc -= 2;
    argv += 2;
  }
  if (pty_mode) {
    // node-pty's child: nothing of the supervisor's but the terminal; wait for the cgroup move.
    close_range(3, ~0U, 0);
    raise(SIGSTOP);
    int fd = open(pty_description, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) fail(126, "taras-exec: cannot open the launch description %s: %s", pty_description, strerror(errno));
    if (fd != DESCRIPTION_FD) {
      if (dup2(fd, DESCRIPTION_FD) < 0) fail(126, "taras-exec: cannot set up the launch description: %s", strerror(errno));
      close(fd);
    }
  }
  // The error pipe closes at the exec: EOF with nothing read means the job runs.
  if (!pty_mode && fcntl(ERROR_FD, F_SETFD, FD_CLOEXEC) != 0) {
    fprintf(stderr, "taras-exec: fd %d (the error pipe) is not open: run by the Taras supervisor only\n", ERROR_FD);
    return 126;
  }
  int drop = 0;
  uid_t uid = getuid();
  gid_t gid = getgid();
  const char *name = "-";
  if (argc == 5 && strcmp(argv[1], "--user") == 0) {
    drop = 1;
    uid = (uid_t) parse_id(argv[2], "uid");
    gid = (gid_t) parse_id(argv[3], "gid");
    name = argv[4];
    if (strcmp(name, "-") == 0) snprintf(label, sizeof label, "uid %u", (unsigned) uid);
    else snprintf(label, sizeof label, "%s (uid %u)", name, (unsigned) uid);
  } else if (argc == 2 && strcmp(argv[1], "--self") == 0) {
    struct passwd *self = getpwuid(uid);
    if (self != NULL) snprintf(label, sizeof label, "%s (uid %u)", self->pw_name, (unsigned) uid);
    else snprintf(label, sizeof label, "uid %u", (unsigned) uid);
  } else {
    fail(126, "taras-exec: usage: taras-exec --user UID GID NAME | --self");
  }
  // Every fd opened below lands above 2, so the dup2s onto 0, 1 and 2 cannot clobber one another.
  for (int fd = open("/dev/null", O_RDWR); fd >= 0 && !stdio_mode && !pty_mode; fd = open("/dev/null", O_RDWR)) {
    if (fd > 2) {
      close(fd);
      break;
    }
  }
  int gate = fcntl(GATE_FD, F_GETFD) >= 0;
  if (drop) drop_privileges(uid, gid, name);

  read_description();
  // fd 5 (the cgroup gate) becomes 3, where the wrapper reads it, now that the description's fd 3 is closed.
  if (gate) {
    move_fd(GATE_FD, DESCRIPTION_FD, "the cgroup gate");
    close(GATE_FD);
  }
  if (strcmp(next_string("version"), "taras-exec 1") != 0) fail(126, "taras-exec: the launch description is not version 1");
  const char *working_dir = next_string("working directory");
  const char *stdout_path = next_string("stdout path");
  const char *stderr_path = next_string("stderr path");
  mode_t mask = (mode_t) next_number("umask", 8, 0777);
  const char *open_mode = next_string("open mode");
  const char *script = next_string("script");
  char **environment = next_list("environment");
  char **arguments = next_list("argv");
  if (arguments[0] == NULL) fail(126, "taras-exec: the launch description has an empty argv");
  if (strcmp(open_mode, "append") != 0 && strcmp(open_mode, "truncate") != 0) fail(126, "taras-exec: open mode \"%s\" is neither append nor truncate", open_mode);

  if (chdir(working_dir) != 0) {
    int err = errno;
    fail(126, "working directory %s is not accessible to %s (%s: %s): it must exist and every directory on its path must be searchable by them",
         working_dir, label, errno_name(err), strerror(err));
  }
  umask(mask);
  if (script[0] != '\0') {
    int fd = open(script, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    // A missing script fails as any other: the shell's exit code says so.
    if (fd < 0 && errno == EACCES) fail(126, "the job's script %s is not readable by %s (EACCES): every directory on its path must be searchable by them", script, label);
    if (fd >= 0) close(fd);
  }
  if (!stdio_mode && !pty_mode) {
    int truncate = strcmp(open_mode, "truncate") == 0;
    int out = open_output(stdout_path, truncate, uid);
    int err = strcmp(stderr_path, stdout_path) == 0 ? out : open_output(stderr_path, truncate, uid);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0) fail(126, "taras-exec: cannot open /dev/null: %s", strerror(errno));
    move_fd(null, 0, "stdin");
    move_fd(out, 1, "stdout");
    move_fd(err, 2, "stderr");
  }
  // Nothing else the supervisor had open reaches the job (the error pipe, too, closes at the exec).
  close_range(gate ? 4 : 3, ~0U, CLOSE_RANGE_CLOEXEC);
  if (limit_as > 0) {
    struct rlimit limit = { (rlim_t) limit_as, (rlim_t) limit_as };
    if (setrlimit(RLIMIT_AS, &limit) != 0) fail(126, "taras-exec: cannot limit the job's memory to %ld bytes (ulimit -v): %s", limit_as, strerror(errno));
  }
  execve(arguments[0], arguments, environment);
  fail(127, "cannot start %s for the job: %s", arguments[0], strerror(errno));
  return 127;
}
