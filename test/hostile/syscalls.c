/* Calls system calls the box's seccomp filter refuses, and prints "name=errno-name"
 * for each. Compiled on the host by the hostile tests and run inside a box as an agent. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <sys/syscall.h>
#include <unistd.h>

static void report(const char *name, long rc) {
  const char *e = rc >= 0 ? "OK" : errno == EPERM ? "EPERM" : errno == ENOSYS ? "ENOSYS" : strerrorname_np(errno);
  printf("%s=%s\n", name, e ? e : "?");
}

int main(void) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  report("io_uring_setup", syscall(SYS_io_uring_setup, 1, &p));
  report("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
  report("add_key", syscall(SYS_add_key, "user", "k", "v", 1, KEY_SPEC_SESSION_KEYRING));
  report("ptrace", ptrace(PTRACE_TRACEME, 0, 0, 0));
  report("setns", syscall(SYS_setns, -1, 0));
  report("unshare_user", unshare(CLONE_NEWUSER));
  report("clone3", syscall(SYS_clone3, NULL, 0));
  report("clone_newuser", syscall(SYS_clone, CLONE_NEWUSER | 17, 0, 0, 0, 0));
  report("userfaultfd", syscall(SYS_userfaultfd, 0));
  report("bpf", syscall(SYS_bpf, 0, NULL, 0));
  report("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
  char c = 'x';
  report("tiocsti", syscall(SYS_ioctl, 0, (1UL << 32) | TIOCSTI, &c));
  report("tioclinux", syscall(SYS_ioctl, 0, TIOCLINUX, &c));
  /* Socket families: only unix, inet, inet6 and routing netlink are allowed. */
  int fds[2];
  report("socket_vsock", socket(40 /* AF_VSOCK */, SOCK_STREAM, 0));
  report("socket_packet", socket(AF_PACKET, SOCK_RAW, 0));
  report("socket_alg", socket(38 /* AF_ALG */, SOCK_SEQPACKET, 0));
  report("socket_bluetooth", socket(31 /* AF_BLUETOOTH */, SOCK_RAW, 1));
  report("socket_key", socket(15 /* AF_KEY */, SOCK_RAW, 2));
  report("socket_xdp", socket(44 /* AF_XDP */, SOCK_RAW, 0));
  report("socket_can", socket(29 /* AF_CAN */, SOCK_RAW, 1));
  report("socket_tipc", socket(30 /* AF_TIPC */, SOCK_RDM, 0));
  report("netlink_audit", socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT));
  report("netlink_uevent", socket(AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT));
  report("netlink_netfilter", socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER));
  report("netlink_generic", socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC));
  report("netlink_route", socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE));
  report("socket_unix", socket(AF_UNIX, SOCK_STREAM, 0));
  report("socket_inet", socket(AF_INET, SOCK_STREAM, 0));
  report("socket_inet6", socket(AF_INET6, SOCK_DGRAM, 0));
  report("socketpair_unix", socketpair(AF_UNIX, SOCK_STREAM, 0, fds));
  report("socketpair_vsock", socketpair(40, SOCK_STREAM, 0, fds));
  report("socketpair_netlink", socketpair(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT, fds));
  report("process_vm_readv", syscall(SYS_process_vm_readv, getppid(), NULL, 0, NULL, 0, 0));
  report("mount", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL));
  report("open_tree", syscall(SYS_open_tree, -100, "/", 0));
  report("fork", fork() == 0 ? (_exit(0), 0) : 0);
  return 0;
}
