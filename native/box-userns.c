/*
 * box-userns: the box's first command. bubblewrap, as host root, has made the box's
 * namespaces and mounts; this then puts boxd in a user namespace of its own, in which box
 * root is an unprivileged host id and agents' ids are themselves:
 *
 *   box-userns --root-id R [--hide DIR]... -- /run/warren/boxd args...
 *
 * Mapping (uid and gid alike):
 *   0           -> R           box root (boxd) is host id R, which owns nothing on the host
 *                               but what the provider hands it (its socket folder, the
 *                               agents' cgroups, the seccomp program)
 *   1000..65533 -> 1000..65533 agents' ids (10000 + slot, the shared group 9999) are the same
 *                               inside and out, so homes keep their owners on the host
 * Host root (0) is mapped to nothing: the host's files appear as nobody (65534) and no
 * capability of box root applies to them. The box's mount, pid, network, IPC and UTS
 * namespaces belong to the host's user namespace, so boxd's capabilities (now only those
 * of the new namespace) cannot mount, remount or unmount anything in them; a command's
 * private mount namespace (its /agent) is new, owned by boxd's, with the box's mounts
 * locked as they are.
 *
 * Only a process outside the new namespace may write a map of more than its own id, so
 * this process forks a helper that stays outside, enters the new namespace itself, lets
 * the helper write its maps, then becomes root inside and executes boxd with the same pid.
 *
 * --hide DIR (an oci box: the engine mounts its cgroup tree at /sys/fs/cgroup, which a local
 * box has not) first unmounts DIR, with what is mounted below it, and removes the folders
 * left empty up to the first that is not, so that the box has no such path at all. It
 * needs CAP_SYS_ADMIN where the box's mounts are (the engine's boxd has it).
 *
 * Needs host root with CAP_SETUID and CAP_SETGID. A failure prints
 * "box-userns: <step>: <reason>" and exits 125.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define AGENT_FIRST 1000
#define AGENT_LAST 65533

static void die(const char *step, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  dprintf(2, "box-userns: %s: %s\n", step, msg);
  _exit(125);
}

static int write_map(pid_t pid, const char *file, const char *text) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  int saved = errno;
  close(fd);
  errno = saved;
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Unmounts dir (and what is below it) and removes the folders left empty above it. */
static void hide(const char *dir) {
  if (dir[0] != '/' || strstr(dir, "/..") || strlen(dir) >= 256) die("hide", "not a plain absolute path: %s", dir);
  /* every mount stacked there, until it is a plain folder (EINVAL) or is not (ENOENT) */
  for (int n = 0;; n++) {
    if (umount2(dir, MNT_DETACH) == 0) {
      if (n == 8) die("hide", "%s: more than 8 mounts", dir);
      continue;
    }
    if (errno == EINVAL || errno == ENOENT) break;
    die("hide", "unmount %s: %s", dir, strerror(errno));
  }
  char path[256];
  strcpy(path, dir);
  /* stops at the first folder that is not empty, is a mount point or cannot be removed */
  while (path[1] && rmdir(path) == 0) {
    char *slash = strrchr(path, '/');
    if (slash == path) break;
    *slash = 0;
  }
}

int main(int argc, char **argv) {
  long root_id = -1;
  const char *hidden[8];
  int nhidden = 0;
  int i = 1;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) {
      i++;
      break;
    }
    if (strcmp(argv[i], "--root-id") == 0 && i + 1 < argc) {
      char *end = NULL;
      errno = 0;
      root_id = strtol(argv[++i], &end, 10);
      if (errno || !end || *end) root_id = -1;
    } else if (strcmp(argv[i], "--hide") == 0 && i + 1 < argc) {
      if (nhidden == 8) die("arguments", "at most 8 --hide");
      hidden[nhidden++] = argv[++i];
    } else die("arguments", "unknown option %s", argv[i]);
  }
  if (root_id <= AGENT_LAST || root_id > 0x7ffffffe) die("arguments", "--root-id must be above %d", AGENT_LAST);
  if (i >= argc) die("arguments", "no command after --");
  if (geteuid() != 0) die("arguments", "must run as root");
  for (int h = 0; h < nhidden; h++) hide(hidden[h]);

  /* the capabilities this process was given, read before the new namespace grants all */
  struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct caps[2];
  if (syscall(SYS_capget, &head, caps) != 0) die("capabilities", "capget: %s", strerror(errno));
  unsigned long long kept = (unsigned long long)caps[1].effective << 32 | caps[0].effective;

  char map[128];
  snprintf(map, sizeof map, "0 %ld 1\n%d %d %d\n", root_id, AGENT_FIRST, AGENT_FIRST, AGENT_LAST - AGENT_FIRST + 1);

  int go[2], done[2];
  if (pipe2(go, O_CLOEXEC) || pipe2(done, O_CLOEXEC)) die("pipe", "%s", strerror(errno));
  pid_t self = getpid();
  pid_t helper = fork();
  if (helper < 0) die("fork", "%s", strerror(errno));
  if (helper == 0) {
    /* outside: wait until the parent is in its namespace, write its maps */
    close(go[1]), close(done[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    char status = 0;
    if (write_map(self, "uid_map", map) != 0) status = 'u';
    else if (write_map(self, "gid_map", map) != 0) status = 'g';
    int err = errno;
    if (status) dprintf(2, "box-userns: %s_map: %s\n", status == 'u' ? "uid" : "gid", strerror(err));
    if (write(done[1], status ? &status : "k", 1) != 1) _exit(1);
    _exit(status ? 1 : 0);
  }
  close(go[0]), close(done[1]);
  if (unshare(CLONE_NEWUSER) != 0) die("unshare", "a user namespace: %s", strerror(errno));
  if (write(go[1], "g", 1) != 1) die("sync", "%s", strerror(errno));
  char answer = 0;
  if (read(done[0], &answer, 1) != 1 || answer != 'k') die("maps", "the helper could not write them");
  int st = 0;
  if (waitpid(helper, &st, 0) != helper || !WIFEXITED(st) || WEXITSTATUS(st) != 0) die("maps", "the helper failed");
  close(go[1]), close(done[0]);

  /* boxd keeps, in its own namespace, exactly the capabilities bubblewrap left it
     (--cap-add, BOXD_CAPS in src/boxes/local/bwrap.ts): every other one leaves the
     bounding set, so they are all it has after exec */
  for (int c = 0; c <= 63; c++) {
    if (!(kept >> c & 1) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL)
      die("capabilities", "drop %d: %s", c, strerror(errno));
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) die("capabilities", "ambient: %s", strerror(errno));

  /* root inside: gid first, no supplementary groups, then uid */
  if (setresgid(0, 0, 0) != 0) die("setresgid", "%s", strerror(errno));
  if (setgroups(0, NULL) != 0) die("setgroups", "%s", strerror(errno));
  if (setresuid(0, 0, 0) != 0) die("setresuid", "%s", strerror(errno));
  execvp(argv[i], argv + i);
  die("exec", "%s: %s", argv[i], strerror(errno));
  return 125;
}
