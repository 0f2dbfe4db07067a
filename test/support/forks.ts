// A command that tries to start n sleeping children at once and prints how many it could
// start, then ends them. perl (Essential in Debian) forks once per child and does not
// retry a refused fork, as bash does for 15 s: the count depends on the pids limit alone.

export function forkCount(n: number): string[] {
  const script =
    "my @k; for (1..$ARGV[0]) { my $p = fork; next unless defined $p; " +
    "if ($p == 0) { sleep 60; exit 0 } push @k, $p } print scalar(@k), qq(\\n); kill 9, @k; 1 while wait > 0";
  return ["perl", "-e", script, String(n)];
}
