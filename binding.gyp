{
  "targets": [
    {
      "target_name": "taras_native",
      "sources": ["native/peercred.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
