import { randomBytes } from "node:crypto";

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz";

/** A new id such as `agt_5k2m9x7q1d3f8h0c`: a short prefix and 16 lowercase base32 characters. */
export function newId(
  prefix:
    | "org"
    | "usr"
    | "mch"
    | "agt"
    | "gld"
    | "run"
    | "sec"
    | "cnv"
    | "msg"
    | "prs"
    | "apr"
    | "evs"
    | "evr"
    | "evd"
    | "sch"
    | "gms"
    | "flw"
    | "fli"
    | "wsp"
    | "cnp"
    | "gha"
    | "cnx"
    | "ptk"
    | "env",
): string {
  const bytes = randomBytes(16);
  let out = "";
  for (const b of bytes) out += alphabet[b & 31];
  return `${prefix}_${out}`;
}

export const idPattern = /^[a-z]{3}_[0-9a-z]{16}$/;
