// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { renderAnswer } from './markdown';

describe('renderAnswer', () => {
  it('renders Markdown and links the known citations', () => {
    const html = renderAnswer('A **bold** claim. [1] Another, [2] and [9].', [1, 2]);
    const doc = new DOMParser().parseFromString(html, 'text/html');
    expect(doc.querySelector('strong')?.textContent).toBe('bold');
    const cites = [...doc.querySelectorAll('a.cite')].map((a) => a.getAttribute('data-cite'));
    expect(cites).toEqual(['1', '2']);
    expect(doc.querySelector('a.cite')?.getAttribute('href')).toBe('#cite-1');
    // an unknown number stays text
    expect(doc.body.textContent).toContain('[9]');
  });
  it('leaves real links and references alone', () => {
    const html = renderAnswer('See [the docs](https://example.com/x) [1]', [1]);
    const doc = new DOMParser().parseFromString(html, 'text/html');
    expect(doc.querySelector('a[href="https://example.com/x"]')?.textContent).toBe('the docs');
    expect(doc.querySelectorAll('a.cite')).toHaveLength(1);
  });
  it('strips scripts, handlers and javascript: links', () => {
    const html = renderAnswer('<img src=x onerror="alert(1)"><script>alert(2)</script>[x](javascript:alert(3)) <b onclick="alert(4)">b</b>', []);
    expect(html).not.toMatch(/onerror|<script|javascript:|onclick|<img/i);
    expect(html).toContain('<b>b</b>');
  });
});
