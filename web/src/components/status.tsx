import { stateLabel } from '../format';

/** StatusPill shows a workflow's or step's state with its colour and a label (never colour alone). */
export function StatusPill({ state, label }: { state: string; label?: string }) {
  return <span class={`pill s-${state}`} data-state={state}>{label ?? stateLabel[state] ?? state}</span>;
}

/** LinkDot shows a live stream's connection. */
export function LinkDot({ state, detail }: { state: string; detail?: string }) {
  const text = state === 'live' ? 'live' : state === 'done' ? 'ended' : state === 'reconnecting' ? 'reconnecting…' : 'connecting…';
  return (
    <span class={`link link-${state}`} title={detail} data-testid="link" data-link={state} role="status">
      <i aria-hidden="true" />{text}
    </span>
  );
}
