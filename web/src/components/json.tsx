/** Json shows a value as indented JSON in a scrolling block. */
export function Json({ value, label }: { value: unknown; label: string }) {
  const text = value === undefined ? '—' : JSON.stringify(value, null, 2);
  return (
    <figure class="json">
      <figcaption>{label}</figcaption>
      <pre tabIndex={0}>{text}</pre>
    </figure>
  );
}
