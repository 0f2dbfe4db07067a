// Markdown as React elements, for what agents write (answers, notes): headings, paragraphs,
// lists, quotes, code, emphasis and links. Nothing is passed through as HTML: every piece of
// text is a text node, raw HTML shows as the text it is, a link keeps only an http(s) or
// mailto address (anything else stays text), and an image is never loaded (it becomes a link
// to its address). So nothing an agent writes runs on the app's origin.
import { Fragment, type ReactNode } from "react";

const SAFE_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

/** The address of a link when it is http(s) or mailto, read as the browser would; else undefined. */
function safeHref(raw: string): string | undefined {
  try {
    const url = new URL(raw.trim());
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : undefined;
  } catch {
    return undefined; // relative or malformed: not followed
  }
}

// the inline forms, each found from a position; the first that starts earliest wins
const INLINE: { kind: string; re: RegExp }[] = [
  { kind: "escape", re: /\\([\\`*_{}[\]()#+\-.!~>|<])/g },
  { kind: "code", re: /(`+)([\s\S]*?[^`])\1(?!`)/g },
  { kind: "image", re: /!\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"\n]*")?\s*\)/g },
  { kind: "link", re: /\[([^\]\n]+)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"\n]*")?\s*\)/g },
  { kind: "autolink", re: /<((?:https?:\/\/|mailto:)[^\s<>]+)>/g },
  { kind: "strong", re: /\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__(?!\w)/g },
  { kind: "em", re: /\*(?=[^\s*])([\s\S]*?[^\s*])\*|(?<!\w)_(?=[^\s_])([\s\S]*?[^\s_])_(?!\w)/g },
  { kind: "del", re: /~~(?=\S)([\s\S]*?\S)~~/g },
  { kind: "break", re: / {2,}\n|\\\n|\n/g },
];

function inline(text: string, key: string): ReactNode[] {
  const out: ReactNode[] = [];
  // each form's next match from the position, found again only once the position passes it
  const next: (RegExpExecArray | null | undefined)[] = INLINE.map(() => undefined);
  let pos = 0;
  let plain = "";
  let n = 0;
  const flush = () => {
    if (plain) out.push(plain);
    plain = "";
  };
  while (pos < text.length) {
    let best = -1;
    for (const [i, form] of INLINE.entries()) {
      let m = next[i];
      if (m === undefined || (m !== null && m.index < pos)) {
        form.re.lastIndex = pos;
        m = next[i] = form.re.exec(text);
      }
      if (m && (best < 0 || m.index < (next[best] as RegExpExecArray).index)) best = i;
    }
    const m = best < 0 ? null : (next[best] as RegExpExecArray);
    if (!m) break;
    plain += text.slice(pos, m.index);
    pos = m.index + m[0].length;
    const k = `${key}.${n++}`;
    const kind = INLINE[best]?.kind;
    if (kind === "escape") {
      plain += m[1];
      continue;
    }
    flush();
    if (kind === "code") out.push(<code key={k}>{(m[2] ?? "").replace(/^ (.+) $/, "$1")}</code>);
    else if (kind === "image" || kind === "link" || kind === "autolink") {
      const href = safeHref(kind === "autolink" ? (m[1] ?? "") : (m[2] ?? ""));
      const label =
        kind === "autolink"
          ? [m[1]]
          : kind === "image"
            ? [`image: ${m[1] || href || m[2] || ""}`]
            : inline(m[1] ?? "", k);
      if (href === undefined) out.push(<Fragment key={k}>{kind === "link" ? label : m[0]}</Fragment>);
      else
        out.push(
          <a key={k} href={href} target="_blank" rel="noopener noreferrer nofollow">
            {label}
          </a>,
        );
    } else if (kind === "strong") out.push(<strong key={k}>{inline(m[1] ?? m[2] ?? "", k)}</strong>);
    else if (kind === "em") out.push(<em key={k}>{inline(m[1] ?? m[2] ?? "", k)}</em>);
    else if (kind === "del") out.push(<del key={k}>{inline(m[1] ?? "", k)}</del>);
    else out.push(<br key={k} />);
  }
  plain += text.slice(pos);
  flush();
  return out;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*).*$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])\s+/;
const blank = (l: string) => l.trim() === "";
const startsBlock = (l: string) =>
  FENCE.test(l) || HEADING.test(l) || RULE.test(l) || QUOTE.test(l) || ITEM.test(l);

function blocks(lines: readonly string[], key: string): ReactNode[] {
  const out: ReactNode[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? "";
    const k = `${key}.${out.length}`;
    if (blank(line)) {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const mark = fence[1] ?? "```";
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? "").trim().startsWith(mark)) body.push(lines[i++] ?? "");
      i++; // the closing fence (or the end)
      out.push(
        <pre key={k} className="md-code">
          <code data-lang={fence[2] || undefined}>{body.join("\n")}</code>
        </pre>,
      );
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = Math.min(6, (heading[1] ?? "#").length + 2); // under the page's own h1, h2
      const Tag = `h${level}` as "h3";
      out.push(<Tag key={k}>{inline(heading[2] ?? "", k)}</Tag>);
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push(<hr key={k} />);
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const body: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i] ?? "")) body.push((lines[i++] ?? "").replace(QUOTE, ""));
      out.push(<blockquote key={k}>{blocks(body, k)}</blockquote>);
      continue;
    }
    const item = ITEM.exec(line);
    if (item) {
      const ordered = /\d/.test(item[2] ?? "");
      const items: string[][] = [];
      let loose = false;
      while (i < lines.length) {
        const l = lines[i] ?? "";
        const m = ITEM.exec(l);
        if (m && /\d/.test(m[2] ?? "") === ordered && (m[1] ?? "").length <= (item[1] ?? "").length) {
          items.push([l.slice(m[0].length)]);
          i++;
          continue;
        }
        const current = items[items.length - 1];
        if (!current) break;
        if (blank(l)) {
          // a blank line inside a list: the list goes on when an item or an indented line follows
          const after = lines[i + 1] ?? "";
          if (i + 1 < lines.length && (/^\s{2,}\S/.test(after) || ITEM.test(after))) {
            loose = true;
            current.push("");
            i++;
            continue;
          }
          break;
        }
        if (/^\s{2,}/.test(l)) current.push(l.replace(/^\s{2,4}/, ""));
        else if (!startsBlock(l))
          current.push(l); // a lazy continuation of the item's text
        else break;
        i++;
      }
      const children = items.map((body, j) => {
        const ik = `${k}.${j}`;
        const simple = !loose && !body.slice(1).some(startsBlock);
        return <li key={ik}>{simple ? inline(body.join("\n"), ik) : blocks(body, ik)}</li>;
      });
      const start = ordered ? Number.parseInt(item[2] ?? "1", 10) : 1;
      out.push(
        ordered ? (
          <ol key={k} start={start === 1 ? undefined : start}>
            {children}
          </ol>
        ) : (
          <ul key={k}>{children}</ul>
        ),
      );
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && !blank(lines[i] ?? "") && (para.length === 0 || !startsBlock(lines[i] ?? "")))
      para.push(lines[i++] ?? "");
    out.push(<p key={k}>{inline(para.join("\n"), k)}</p>);
  }
  return out;
}

/** Markdown text drawn as elements (never as HTML). */
export function Markdown({ text, className, testId }: { text: string; className?: string; testId?: string }) {
  return (
    <div className={className ? `md ${className}` : "md"} data-testid={testId}>
      {blocks(text.replace(/\r\n?/g, "\n").split("\n"), "md")}
    </div>
  );
}
