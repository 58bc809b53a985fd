import { describe as suite, expect, it } from 'vitest';
import { bulkFilter, describe, parseMetadata } from './bulk';

suite('bulk filters', () => {
  it('read metadata pairs', () => {
    expect(parseMetadata('batch=b7, team = ops\nnote=a b')).toEqual({ metadata: { batch: 'b7', team: 'ops', note: 'a b' } });
    expect(parseMetadata('  ')).toEqual({ metadata: {} });
    expect(parseMetadata('batch').error).toMatch(/not key=value/);
    expect(parseMetadata('=x').error).toMatch(/not key=value/);
  });
  it('are made of the page\'s filter', () => {
    expect(bulkFilter('running', 'batch=b7', '1h')).toEqual({ filter: { status: ['submitted', 'working'], metadata: { batch: 'b7' }, older_than: '1h' } });
    expect(bulkFilter('all', '', '', 'nightly')).toEqual({ filter: { metadata: { schedule_id: 'nightly' } } });
    expect(bulkFilter('failed', '', '')).toEqual({ filter: { status: ['failed', 'rejected'] } });
    expect(bulkFilter('all', '', '1h30m')).toEqual({ filter: { older_than: '1h30m' } });
  });
  it('refuse no filter, a bad pair or a bad age', () => {
    expect(bulkFilter('all', '', '').error).toMatch(/needs a filter/);
    expect(bulkFilter('all', 'x', '').error).toMatch(/key=value/);
    expect(bulkFilter('all', '', 'yesterday').error).toMatch(/duration/);
  });
  it('are said in words', () => {
    expect(describe({ status: ['working'], metadata: { batch: 'b7' }, older_than: '1h' })).toBe('status working, batch=b7, older than 1h');
  });
});
