// Max disk, over the machine's reserved-disk bar: what the other agents' caps reserve of the
// machine's disk cap, what this agent's cap adds, the total and this agent's share, the room the
// others leave unreserved (the safe amount) and the disk free as last measured.
import { mib } from "./ui";

export interface DiskFigures {
  /** The machine's disk cap. */
  machineMib: number;
  /** What the other agents' caps reserve of it. */
  othersMib: number;
  /** The machine's cap less its folder as last measured; null before the first measurement. */
  freeMib: number | null;
  machineName: string;
}

/** The unreserved room the other agents leave. */
export const roomOf = (f: DiskFigures) => Math.max(0, f.machineMib - f.othersMib);

/** The create dialog's starting value: 10240 MiB, or the room when smaller but at least 1 GiB. */
export function startingMaxDisk(f: DiskFigures): number {
  const room = roomOf(f);
  return room < 10240 && room >= 1024 ? room : 10240;
}

/** The warning the API gives too when a cap passes the room (null when it fits). */
export function diskWarning(f: DiskFigures, value: number): string | null {
  const room = roomOf(f);
  if (value <= room) return null;
  if (room === 0)
    return `The other agents' caps reserve all of ${f.machineName}'s ${mib(f.machineMib)}: pick another machine or raise this machine's disk cap.`;
  return `Past the unreserved room: the machine's disk may fill before this agent reaches its own cap. Lower Max disk to ${mib(room)} or pick another machine.`;
}

export function MaxDisk({
  figures,
  value,
  onChange,
  disabled,
  prefix = "",
}: {
  figures: DiskFigures;
  value: number;
  onChange?: (v: number) => void;
  disabled?: boolean;
  /** Before its input's name and its test ids, when a page shows a second one (the move picker's). */
  prefix?: string;
}) {
  const room = roomOf(figures);
  const total = figures.othersMib + (Number.isFinite(value) ? value : 0);
  const scale = Math.max(figures.machineMib, total, 1);
  const pct = (n: number) => `${(Math.max(0, n) / scale) * 100}%`;
  const mine = Number.isFinite(value) ? value : 0;
  const fits = Math.min(mine, room);
  const past = mine - fits;
  const share = total > 0 ? Math.round((mine / total) * 100) : 0;
  const warning = Number.isFinite(value) ? diskWarning(figures, value) : null;
  return (
    <div className="maxdisk">
      <label>
        Max disk (MiB)
        <input
          type="number"
          name={`${prefix}max_workspace_mib`}
          min={1}
          step={1}
          inputMode="numeric"
          value={Number.isFinite(value) ? value : ""}
          disabled={disabled}
          onChange={(e) => onChange?.(e.target.value === "" ? NaN : Number(e.target.value))}
        />
      </label>
      <div
        className="reserved"
        data-testid={`${prefix}reserved-bar`}
        aria-label={`reserved disk of ${figures.machineName}`}
      >
        <div className="track stacked">
          <div
            className="seg others"
            style={{ width: pct(figures.othersMib) }}
            title="the other agents reserve"
          />
          <div className="seg mine" style={{ width: pct(fits) }} title="this agent adds" />
          <div className="seg past" style={{ width: pct(past) }} title="past the machine's cap" />
          <div className="capmark" style={{ left: pct(figures.machineMib) }} aria-hidden="true" />
        </div>
        <ul className="legend">
          <li>
            <i className="sw others" /> others reserve{" "}
            <b data-testid={`${prefix}others-mib`}>{mib(figures.othersMib)}</b>
          </li>
          <li>
            <i className="sw mine" /> this agent adds <b data-testid={`${prefix}mine-mib`}>{mib(mine)}</b>
          </li>
          {past > 0 && (
            <li>
              <i className="sw past" /> past the unreserved room <b>{mib(past)}</b>
            </li>
          )}
        </ul>
        <p className="diskline" data-testid={`${prefix}disk-line`}>
          Total <b data-testid={`${prefix}total-mib`}>{mib(total)}</b> of {mib(figures.machineMib)} on{" "}
          {figures.machineName}; this agent's share <b data-testid={`${prefix}share`}>{share}%</b>. Safe: up
          to <b data-testid={`${prefix}room-mib`}>{mib(room)}</b> unreserved.{" "}
          {figures.freeMib === null ? (
            <span data-testid={`${prefix}free`}>Disk free is measured after a generation.</span>
          ) : (
            <span data-testid={`${prefix}free`}>
              Disk free as last measured: <b>{mib(figures.freeMib)}</b>.
            </span>
          )}
        </p>
        {warning ? (
          <p className="warn" role="status" data-testid={`${prefix}disk-warning`}>
            {warning}
          </p>
        ) : (
          <p className="warn placeholder" aria-hidden="true" />
        )}
      </div>
    </div>
  );
}
