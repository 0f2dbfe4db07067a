/*
 * An exec request: its checks (the rules of parseExecSpec in src/boxd/validate.ts, with
 * the same messages) and the options it gives the helper (native/boxd-spawn.c).
 */
#ifndef BOXD_SPEC_H
#define BOXD_SPEC_H

#include "boxd.h"

/* A checked request. Its strings point into the parsed message, which must outlive it. */
struct spec {
  const struct jv *argv; /* strings, at least one */
  const struct jv *env;  /* an object of strings */
  const struct jv *cwd;
  long uid, gid;
  long groups[32];
  size_t ngroups;
  long timeout_ms; /* 0 = none */
  const struct jv *agent_dir; /* NULL = none */
  /* fence: the home folder and the folders of it the command keeps on disk (a mount
     namespace of its own: the rest of the home is not there); NULL = the whole home */
  const struct jv *fence_home, *fence_keep, *fence_hide; /* keep NULL: the whole home */
  /* a conversation's worktree (from) bound at its repository's folder (at); NULL = none */
  const struct jv *place_from, *place_at;
  const struct jv *workspace_dir; /* bound read-write at /workspace; NULL = none */
  const struct jv *self_dir;      /* bound read-only at /opt/warren/contracts/self; NULL = none */
  int generation;
  int trace; /* the answer carries the exec's phase times (see ExecTrace) */
  int has_mem, has_pids;
  long mem_mib, pids;
  /* files: the paths the command may read, and read and write (Landlock); NULL = not
     restricted */
  const struct jv *fs_read, *fs_write;
  long port_first, port_last; /* bindPorts; 0 = not restricted */
  /* network: walled from the box's other agents: TCP connections only to these ranges,
     abstract unix sockets only of its own processes; nconnect 0 = not walled */
  long connect_first[8], connect_last[8];
  size_t nconnect;
  int walled;
};

/* The error of a request (a message). */
struct perr {
  struct buf msg;
};

/* Whether x is an integer number from min to max. */
int spec_is_int(const struct jv *x, double min, double max);
/* Takes an integer from min to max into *out; -1 with the message otherwise. */
int spec_int(const struct jv *x, const char *what, double min, double max, long *out, struct perr *e);
/* Checks the request's exec object into s; -1 with the message. */
int spec_parse(const struct jv *x, struct spec *s, struct perr *e);
/* The helper's options: NUL-terminated strings, "--" and then argv. */
int spec_options(const struct spec *s, const char *seccomp, struct buf *o);
/* The command's walls alone (who it runs as, its filter, its mounts, its file and port
   rules), between "--walls" and "--end-walls", for a ready helper to apply before its
   command comes; 1 (nothing written) when they cannot go ahead of it (a fenced home). */
int spec_walls(const struct spec *s, const char *seccomp, struct buf *o);
/* The rest of the options, for a helper that applied the walls already: its cwd, trace,
   environment, "--" and argv. */
int spec_command(const struct spec *s, struct buf *o);

#endif
