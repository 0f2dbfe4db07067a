// Small shared pieces: errors as the API says them, empty states, progress, bars, sizes.
import { useEffect, useRef, type ReactNode } from "react";
import { describeError } from "./api";

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const { code, message } = describeError(error);
  return (
    <div className="error" role="alert">
      <strong>{message}</strong> <code className="code">{code}</code>
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

export function Spinner({ label }: { label?: string }) {
  return (
    <span className="spinner" role="status" aria-live="polite">
      <span className="dot" aria-hidden="true" />
      {label}
    </span>
  );
}

/** A button that shows its action going on (and cannot be pressed twice meanwhile). */
export function Action({
  busy,
  busyLabel,
  children,
  ...rest
}: React.ButtonHTMLAttributes<HTMLButtonElement> & { busy?: boolean; busyLabel?: string }) {
  return (
    <button {...rest} disabled={rest.disabled || busy} aria-busy={busy || undefined}>
      {busy ? <Spinner label={busyLabel ?? "Working…"} /> : children}
    </button>
  );
}

/** Placeholder rows of the height the data will take, so nothing moves when it arrives. */
export function Loading({ rows = 3 }: { rows?: number }) {
  return (
    <div aria-busy="true" aria-label="loading">
      {Array.from({ length: rows }, (_, i) => (
        <div key={i} className="skeleton" />
      ))}
    </div>
  );
}

export const mib = (n: number | null | undefined) =>
  n === null || n === undefined ? "—" : `${n.toLocaleString("en")} MiB`;

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : "—");

/** One measured figure against its cap. */
export function UseBar({ label, used, cap }: { label: string; used: number | null; cap: number }) {
  const pct = used === null ? 0 : Math.min(100, (used / Math.max(1, cap)) * 100);
  return (
    <div className="usebar">
      <div className="usebar-head">
        <span>{label}</span>
        <span>
          {used === null ? "not measured yet (measured after a run)" : `${mib(used)} of ${mib(cap)}`}
        </span>
      </div>
      <div
        className="track"
        role="meter"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={cap}
        aria-valuenow={used ?? 0}
      >
        <div className={`fill ${pct >= 90 ? "over" : ""}`} style={{ width: `${pct}%` }} />
      </div>
    </div>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge s-${status}`}>{status}</span>;
}

/** A modal dialog: focus goes in, Escape closes, focus comes back. */
export function Dialog({
  title,
  onClose,
  children,
}: {
  title: string;
  onClose: () => void;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    const before = document.activeElement as HTMLElement | null;
    d.showModal();
    return () => {
      d.close();
      before?.focus();
    };
  }, []);
  return (
    <dialog ref={ref} aria-label={title} onCancel={(e) => (e.preventDefault(), onClose())}>
      <h2>{title}</h2>
      {children}
    </dialog>
  );
}

/** A live connection's state line (a terminal's, a browser's watch), read out as it changes. */
export function LiveState({
  testId,
  state,
  busy,
  text,
}: {
  testId: string;
  state: string;
  busy: boolean;
  text: string;
}) {
  return (
    <span
      data-testid={testId}
      data-state={state}
      className={state === "error" ? "error" : "sub"}
      role="status"
      aria-live="polite"
    >
      {busy && (
        <span className="spinner">
          <span className="dot" aria-hidden="true" />{" "}
        </span>
      )}
      {text}
    </span>
  );
}
