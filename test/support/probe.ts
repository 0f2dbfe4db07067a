// What the suites that look for a secret in a box share: a shell script that says, for each
// value, where in the box it is found: the environment, any process's environ or command line,
// the files of the home, /agent, /tmp, /etc and /data. The value is decoded in the shell and
// handed to grep through a pipe, so that no command line of the search holds it; a control
// value (one that is there) shows that the search finds what is there.
const b64 = (s: string) => Buffer.from(s).toString("base64");

/** The script: a line `name: where…` (or `name: none`) a value, then the `after` lines as they are. */
export const whereFound = (values: Record<string, string>, after: string[] = []): string =>
  [
    "look() {",
    '  hits=""',
    '  env | grep -qaF -f <(printf "%s\\n" "$1") && hits="$hits env"',
    "  for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do",
    '    grep -qaF -f <(printf "%s\\n" "$1") "$f" 2>/dev/null && hits="$hits ${f%/*}/${f##*/}"',
    "  done",
    '  for f in $(grep -rlaF -f <(printf "%s\\n" "$1") /home /agent /tmp /etc /data 2>/dev/null); do hits="$hits $f"; done',
    '  echo "${hits:- none}"',
    "}",
    ...Object.entries(values).map(
      ([name, v]) => `echo "${name}:$(look "$(printf %s ${b64(v)} | base64 -d)")"`,
    ),
    ...after,
  ].join("\n");

/**
 * A command that tries to read each path (a folder when it ends with `/`, else a file) and
 * prints, a line each, `READ` or the errno's name (`EACCES`...): what another agent's process
 * may see of a place.
 */
export const readProbe = (paths: string[]): string => {
  const script = [
    "import errno, os, sys",
    "for p in sys.argv[1:]:",
    "  try:",
    "    (os.listdir if p.endswith('/') else (lambda q: open(q).read()))(p); print('READ')",
    "  except OSError as e: print(errno.errorcode[e.errno])",
  ].join("\n");
  return `python3 -c "${script}" ${paths.join(" ")}`;
};
