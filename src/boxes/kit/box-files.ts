// What every box of a server reads alike, written once in STATE_ROOT/run/box-files/ rather
// than at every start: the agents' seccomp program (box root's, 0600), boxd's own (root's,
// 0600) and the generated /etc files; each box binds them read-only.
import fs from "node:fs";
import path from "node:path";
import { ETC_GENERATED } from "./boxd.js";
import { BOXD_SECCOMP_DENY, encodeProgram, seccompProgram, type SeccompArch } from "./seccomp.js";

export interface BoxFilePaths {
  seccompFile: string;
  boxdSeccompFile: string;
  etcFiles: Record<string, string>;
}

export class BoxFiles {
  #written: BoxFilePaths | undefined;

  constructor(
    private readonly dir: string,
    private readonly boxRootId: number,
  ) {}

  /** The files' paths; written the first time, and again when something removed one. */
  ensure(arch: SeccompArch): BoxFilePaths {
    const known = this.#written;
    if (
      known &&
      [known.seccompFile, known.boxdSeccompFile, ...Object.values(known.etcFiles)].every(fs.existsSync)
    )
      return known;
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o755 });
    fs.chmodSync(this.dir, 0o755);
    const etcFiles: Record<string, string> = {};
    for (const [name, text] of Object.entries(ETC_GENERATED))
      etcFiles[name] = this.#write(`etc.${name}`, text, 0o644);
    this.#written = {
      seccompFile: this.#write("seccomp.bpf", encodeProgram(seccompProgram(arch)), 0o600, this.boxRootId),
      boxdSeccompFile: this.#write(
        "boxd-seccomp.bpf",
        encodeProgram(seccompProgram(arch, BOXD_SECCOMP_DENY)),
        0o600,
      ),
      etcFiles,
    };
    return this.#written;
  }

  /** Replaces the file whole (a rename), so that a box never binds half of one. */
  #write(name: string, bytes: string | Buffer, mode: number, owner = 0): string {
    const file = path.join(this.dir, name);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, bytes, { mode });
    fs.chmodSync(tmp, mode);
    fs.chownSync(tmp, owner, owner);
    fs.renameSync(tmp, file);
    return file;
  }
}
