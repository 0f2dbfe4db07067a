// The assistant's system prompt: warren's system.md template (or the operator's, in
// STATE_ROOT/templates/system.md), filled with the agent (its name, id and home), the date,
// its task (the spec's instructions, Markdown, whose own places are filled first) and its
// memory (its memory artifact, agents/<agent id>/memory.md of the artifact store, which
// outlives its home). `{{name}}` places are filled
// once; an unknown place stays as written.
export const SYSTEM_TEMPLATE = `You are {{agent_name}}, an agent of warren (id {{agent_id}}). Your home is {{home}}: a folder that
persists between runs. You act only through the tools you are given; a tool call may be refused by
your tool policy, and then its answer says so: take another way or explain what you could not do.
When you have the answer, give it without calling a tool: that answer is the run's output.

Today is {{date}}.

# Your task

{{task}}

# Your memory

{{memory}}
`;

export interface SystemPromptValues {
  agent_name: string;
  agent_id: string;
  home: string;
  date: string;
  task: string;
  memory: string;
}

const fill = (text: string, values: Partial<SystemPromptValues>): string =>
  text.replace(/\{\{\s*([a-z_]+)\s*\}\}/g, (whole, key: string) => {
    const v = Object.hasOwn(values, key) ? values[key as keyof SystemPromptValues] : undefined;
    return v ?? whole;
  });

export function renderSystemPrompt(template: string, values: SystemPromptValues): string {
  const { task, ...rest } = values;
  return fill(template, { ...values, task: fill(task, rest) });
}
