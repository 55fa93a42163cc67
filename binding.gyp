{
  "targets": [
    {
      "target_name": "taras_native",
      "sources": ["native/peercred.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    },
    {
      "target_name": "taras-exec",
      "type": "executable",
      "sources": ["native/taras-exec.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
