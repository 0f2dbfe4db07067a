/*
 * The commands' cgroups. Each command runs in a cgroup of its own, named x<n>-<time>,
 * made in every hierarchy boxd was given (struct config's roots): its limits are
 * written there, its usage read there, and a kill sends SIGKILL to every pid in it.
 */
#ifndef BOXD_CGROUP_H
#define BOXD_CGROUP_H

#include "boxd.h"

struct usage {
  int has_cpu, has_peak;
  unsigned long long cpu_ns;     /* CPU time of the whole tree */
  unsigned long long peak_bytes; /* its peak memory */
};

/* The folder of cgroup name in hierarchy r. */
void cg_path(const struct config *cfg, int r, const char *name, const char *file, char *out, size_t cap);
/* Makes the cgroup in every hierarchy; -1 (with err, and nothing left) on failure. */
int cg_create(const struct config *cfg, const char *name, struct buf *err);
/* Writes the command's own limits (has_mem/has_pids say which); -1 with err. */
int cg_limit(const struct config *cfg, const char *name, int has_mem, long mem_mib, int has_pids, long pids,
             struct buf *err);
/* No fork is allowed in the cgroup any more (pids.max 0): what a kill ends stays ended. */
void cg_no_forks(const struct config *cfg, const char *name);
/* Freezes (frozen 1) or thaws the cgroup where the box has a freezer (v1 freezer.state,
   v2 cgroup.freeze); 1 when a freezer took the write. A frozen tree does not run while
   its pids are read and signalled; SIGKILLed while frozen, it ends when thawed. */
int cg_freeze(const struct config *cfg, const char *name, int frozen);
/* The pids in the cgroup (union over hierarchies): their count, the pids in *out
   (malloc'd) unless out is NULL. */
size_t cg_procs(const struct config *cfg, const char *name, pid_t **out);
/* Removes the cgroup if it is empty. */
void cg_remove(const struct config *cfg, const char *name);
/* The same, later and off the event loop: on cgroup v1 an rmdir waits for the kernel's
   cgroup lock, which a helper joining its cgroup holds for an RCU grace period (~10 ms),
   so removals go to one removal thread and boxd goes on answering meanwhile. */
void cg_remove_later(const struct config *cfg, const char *name);
void cg_usage(const struct config *cfg, const char *name, struct usage *u);
/* The commands' cgroups present (names starting with x in the first hierarchy). */
void cg_names(const struct config *cfg, struct names *out);

#endif
