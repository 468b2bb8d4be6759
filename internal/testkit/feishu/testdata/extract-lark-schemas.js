// extract-lark-schemas.js writes lark-openapi.json: the request schemas of
// the Feishu Open API calls superagent makes, as JSON Schema, taken from the
// npm package @larksuiteoapi/lark-mcp (MIT, LICENSE-lark-mcp), whose
// dist/mcp-tool/tools/en/gen-tools/zod/*.js hold one zod schema per call.
//
// Run it where that package and zod-to-json-schema are installed:
//
//   npm pack @larksuiteoapi/lark-mcp@0.5.1 && tar xzf larksuiteoapi-lark-mcp-0.5.1.tgz
//   npm install zod@3 zod-to-json-schema@3
//   node extract-lark-schemas.js package > lark-openapi.json
//
// The output is deterministic (calls in the order below, keys sorted).
'use strict';
const path = require('path');
const { zodToJsonSchema } = require('zod-to-json-schema');

const pkg = process.argv[2] || 'package';
const calls = [
  ['auth_v3', 'authV3AuthTenantAccessTokenInternal'],
  ['im_v1', 'imV1MessageCreate'],
  ['im_v1', 'imV1MessageReply'],
  ['im_v1', 'imV1MessageGet'],
  ['im_v1', 'imV1MessagePatch'],
  ['im_v1', 'imV1MessageReactionCreate'],
];

function sorted(v) {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === 'object') {
    const out = {};
    for (const k of Object.keys(v).sort()) {
      if (k === 'description' || k === '$schema') continue; // prose, and the draft is named once below
      out[k] = sorted(v[k]);
    }
    return out;
  }
  return v;
}

const version = require(path.resolve(pkg, 'package.json')).version;
const operations = calls.map(([file, name]) => {
  const tools = require(path.resolve(pkg, 'dist/mcp-tool/tools/en/gen-tools/zod', file + '.js'));
  const t = tools[name];
  if (!t) throw new Error('no ' + name + ' in ' + file);
  const op = { name: t.name, method: t.httpMethod, path: t.path, tokens: t.accessTokens || [] };
  // zod's data, params and path: the JSON body, the query, the path's :parameters.
  for (const [part, key] of [['data', 'body'], ['params', 'query'], ['path', 'path_params']]) {
    if (t.schema[part]) op[key] = sorted(zodToJsonSchema(t.schema[part], { target: 'jsonSchema7', $refStrategy: 'none' }));
  }
  return op;
});
process.stdout.write(JSON.stringify({
  source: '@larksuiteoapi/lark-mcp ' + version + ' dist/mcp-tool/tools/en/gen-tools/zod (MIT), by extract-lark-schemas.js',
  $schema: 'http://json-schema.org/draft-07/schema#',
  operations,
}, null, 1) + '\n');
