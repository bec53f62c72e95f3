import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateExternal } from '../../../src/registry/formats/external.ts';

void test('a URL or an image with a protocol is accepted and echoed', () => {
  assert.deepEqual(validateExternal({ url: 'https://models.example.com/v2', protocol: 'v2' }), {
    ok: true,
    info: { url: 'https://models.example.com/v2', protocol: 'v2' },
  });
  assert.deepEqual(validateExternal({ image: 'ghcr.io/acme/llm-server:1.4', protocol: 'openai' }), {
    ok: true,
    info: { image: 'ghcr.io/acme/llm-server:1.4', protocol: 'openai' },
  });
  assert.ok(validateExternal({ url: 'http://10.0.0.5:8000', protocol: 'openai' }).ok);
});

void test('bad external specs are refused with the reason', () => {
  const cases: [unknown, RegExp][] = [
    [undefined, /an external model needs a spec object/],
    ['https://x', /an external model needs a spec object/],
    [[], /an external model needs a spec object/],
    [
      { url: 'https://x.example', image: 'a/b', protocol: 'v2' },
      /exactly one of "url" .* or "image"/,
    ],
    [{ protocol: 'v2' }, /exactly one of "url"/],
    [{ url: 'https://x.example' }, /"protocol" must be "v2" or "openai", got nothing/],
    [
      { url: 'https://x.example', protocol: 'grpc' },
      /"protocol" must be "v2" or "openai", got "grpc"/,
    ],
    [
      { url: 'ftp://x.example/model', protocol: 'v2' },
      /"url" must be an http:\/\/ or https:\/\/ URL, got "ftp:\/\/x.example\/model"/,
    ],
    [{ url: 'not a url', protocol: 'v2' }, /"url" must be an http/],
    [{ url: 42, protocol: 'v2' }, /"url" must be an http/],
    [{ image: '', protocol: 'v2' }, /"image" must be a container image reference/],
    [{ image: 'bad image', protocol: 'v2' }, /"image" must be a container image reference/],
    [
      { url: 'https://x.example', protocol: 'v2', token: 's3cret' },
      /unknown field\(s\) token; allowed: url, image, protocol/,
    ],
  ];
  for (const [spec, reason] of cases) {
    const result = validateExternal(spec);
    assert.match(result.ok ? '' : result.reason, reason, JSON.stringify(spec));
  }
});
