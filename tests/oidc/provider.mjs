// A real OpenID provider (the npm package oidc-provider, OpenID Certified) on 127.0.0.1 for the
// authentication tests: client-credentials grants issuing JWT access tokens whose audience is the
// resource indicator asked for (default http://agent.test/a2a; the resource .../short gets tokens
// that live 1 s). Clients: alice (every scope), bob (a2a.call), carol (a2a.admin only).
//
//   node provider.mjs PORT KEYS_FILE [--rotate]
//
// The signing keys live in KEYS_FILE (created with one RS256 key when missing). --rotate adds a new
// ES256 key in front (it signs from then on) and keeps the old one published, as a provider rotating
// its keys does. Prints "listening" when ready.
import fs from 'node:fs';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const [port, keysFile, ...flags] = process.argv.slice(2);
if (!port || !keysFile) {
  console.error('usage: node provider.mjs PORT KEYS_FILE [--rotate]');
  process.exit(2);
}
const jwks = fs.existsSync(keysFile) ? JSON.parse(fs.readFileSync(keysFile, 'utf8')) : { keys: [] };
if (jwks.keys.length === 0 || flags.includes('--rotate')) {
  const alg = jwks.keys.length === 0 ? 'RS256' : 'ES256';
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: `${alg.toLowerCase()}-${Date.now()}`, alg, use: 'sig' };
  jwks.keys.unshift(jwk);
  fs.writeFileSync(keysFile, JSON.stringify(jwks));
}

const SCOPES = ['a2a.call', 'a2a.push', 'a2a.admin'];
const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: 'client_secret_post',
  scope,
});

const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [client('alice', SCOPES.join(' ')), client('bob', 'a2a.call'), client('carol', 'a2a.admin')],
  jwks,
  scopes: SCOPES,
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => 'http://agent.test/a2a',
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: SCOPES.join(' '),
        audience: resource,
        accessTokenTTL: resource.endsWith('/short') ? 1 : 600,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: jwks.keys[0].alg } },
      }),
    },
  },
});
provider.listen(Number(port), '127.0.0.1', () => console.log(`listening ${issuer} kid=${jwks.keys[0].kid}`));
