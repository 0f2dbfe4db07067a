// Every command group, in the order the help lists them.
//
// A new command in a group is one more entry in that group's module: its summary, arguments,
// options, `parse` (checks, no I/O) and `run` (the SDK call and the output). A new group is a
// module of its own (defineGroup, or defineSingle for a one-word command) and its name below.
import type { Group } from "../command.js";
import { agents } from "./agents.js";
import { areas } from "./areas.js";
import { artifacts } from "./artifacts.js";
import { chat } from "./chat.js";
import { completion } from "./completion.js";
import { conversations } from "./conversations.js";
import { doctor } from "./doctor.js";
import { egress } from "./egress.js";
import { evals } from "./evals.js";
import { evidence } from "./evidence.js";
import { exec } from "./exec.js";
import { files } from "./files.js";
import { flows } from "./flows.js";
import { guilds } from "./guilds.js";
import { init } from "./init.js";
import { login } from "./login.js";
import { machines } from "./machines.js";
import { mcp } from "./mcp.js";
import { orgs } from "./orgs.js";
import { runs } from "./runs.js";
import { schedules } from "./schedules.js";
import { secrets } from "./secrets.js";
import { serve } from "./serve.js";
import { shell } from "./shell.js";
import { usage } from "./usage.js";
import { approvals, canary, versions } from "./versions.js";

export const groups: readonly Group[] = [
  serve,
  init,
  doctor,
  login,
  orgs,
  areas,
  machines,
  agents,
  guilds,
  exec,
  shell,
  runs,
  schedules,
  chat,
  conversations,
  versions,
  canary,
  flows,
  evals,
  approvals,
  evidence,
  files,
  artifacts,
  usage,
  egress,
  secrets,
  completion,
  mcp,
];
