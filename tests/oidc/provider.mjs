// The OpenID provider tfmirror's tests sign in against: npm's oidc-provider
// (a certified implementation), on loopback with TLS. It mints what the
// mirror meets in the field: a CI job's token (a JWT access token from the
// client credentials grant, with the claims GitHub Actions puts in its
// job tokens), and a person's ID token (authorization code with PKCE,
// through the provider's own login and consent pages).
//
// By default it conforms as the library does out of the box: the claims a
// scope asks for (`profile`, `email`, `groups`) are in the UserInfo answer,
// not in the ID token, whenever an access token is handed out (OpenID
// Connect Core 5.4). OIDC_CONFORM=0 puts them in the ID token as well, as
// Keycloak and Dex do.
//
// Settings come from the environment:
//   OIDC_PORT      the port to listen on (0: any; the chosen one is printed)
//   OIDC_CERT, OIDC_KEY  the TLS certificate and key (PEM files)
//   OIDC_AUDIENCE  the audience (resource) CI tokens are minted for
//   OIDC_REDIRECT  the mirror's sign-in callback URL
//   OIDC_KID       the key IDs' stem: a new stem is a key rotation
//   OIDC_TTL       CI tokens' lifetime in seconds (default 300)
//   OIDC_CONFORM   0: the claims in the ID token too (default: UserInfo only)
//   OIDC_CLAIMS_PARAMETER  1: the `claims` request parameter is taken
//   OIDC_KEYS_OUT  a file to write the signing keys to (DER in base64, by
//                  key ID), so that a test can mint what only this issuer signs
// Once it listens, it prints one line: `listening <issuer URL>`; then a
// line `userinfo` for every UserInfo request it answers.

import { readFileSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import https from 'node:https';
import Provider from 'oidc-provider';

const env = (name, fallback) => process.env[name] ?? fallback;
const kid = env('OIDC_KID', 'k1');
const audience = env('OIDC_AUDIENCE', 'https://mirror.test');
const ttl = Number(env('OIDC_TTL', '300'));
const redirect = env('OIDC_REDIRECT', 'https://127.0.0.1/-/signin/callback');

// A signing key: its private JWK (for the provider) and its DER, base64
// (for OIDC_KEYS_OUT: PKCS #8 for EC, PKCS #1 for RSA).
function key(type, options, alg, id) {
  const { privateKey } = generateKeyPairSync(type, options);
  return {
    jwk: { ...privateKey.export({ format: 'jwk' }), kid: id, alg, use: 'sig' },
    der: privateKey.export({ format: 'der', type: type === 'rsa' ? 'pkcs1' : 'pkcs8' }).toString('base64'),
  };
}

// Claims of the CI jobs, by client: what GitHub Actions puts in a job's
// token for a workflow on the main branch of acme/infra (signed ES256, or
// RS256 by the `-rs256` client), and for a repository of another owner.
const main = {
  repository: 'acme/infra', repository_owner: 'acme', ref: 'refs/heads/main',
  workflow: 'deploy', job_workflow_ref: 'acme/infra/.github/workflows/deploy.yml@refs/heads/main',
};
const jobs = {
  'acme-infra-main': main,
  'acme-infra-rs256': main,
  'other-owner': {
    repository: 'evil/infra', repository_owner: 'evil', ref: 'refs/heads/main', workflow: 'deploy',
  },
};

// The people who may sign in, with their groups.
const people = {
  alice: ['platform-approvers', 'dev'],
  bob: ['dev'],
  carol: [],
};

// The clients people sign in through: the mirror (plain JSON UserInfo),
// and the mirror registered for signed UserInfo answers.
const people_clients = ['tfmirror', 'tfmirror-signed'];

const keys = [
  key('ec', { namedCurve: 'P-256' }, 'ES256', `${kid}-ec`),
  key('rsa', { modulusLength: 2048 }, 'RS256', `${kid}-rsa`),
];
if (process.env.OIDC_KEYS_OUT) {
  writeFileSync(process.env.OIDC_KEYS_OUT, JSON.stringify(Object.fromEntries(keys.map((k) => [k.jwk.kid, k.der]))));
}

const server = https.createServer({
  cert: readFileSync(env('OIDC_CERT')),
  key: readFileSync(env('OIDC_KEY')),
});

server.listen(Number(env('OIDC_PORT', '0')), '127.0.0.1', () => {
  const issuer = `https://127.0.0.1:${server.address().port}`;
  const configuration = {
    jwks: { keys: keys.map((k) => k.jwk) },
    clients: [
      ...Object.keys(jobs).map((id) => ({
        client_id: id,
        client_secret: `${id}-secret`,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_post',
      })),
      {
        client_id: 'tfmirror',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: [redirect],
      },
      {
        client_id: 'tfmirror-signed',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: [redirect],
        userinfo_signed_response_alg: 'ES256',
      },
    ],
    cookies: { keys: ['tfmirror-test-cookies'] },
    claims: { openid: ['sub'], profile: ['name'], email: ['email'], groups: ['groups'] },
    findAccount: async (_ctx, id) => ({
      accountId: id,
      claims: async () => ({
        sub: id, name: id, email: `${id}@example.test`, groups: people[id] ?? [],
      }),
    }),
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      jwtUserinfo: { enabled: true },
      claimsParameter: { enabled: env('OIDC_CLAIMS_PARAMETER', '0') === '1' },
      resourceIndicators: {
        enabled: true,
        // People's access tokens are for UserInfo only: no resource, as
        // the UserInfo endpoint takes no token minted for another.
        defaultResource: (_ctx, client) => (people_clients.includes(client?.clientId) ? undefined : audience),
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource, client) => ({
          scope: 'mirror',
          audience: resource,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: client?.clientId?.endsWith('-rs256') ? 'RS256' : 'ES256' } },
        }),
      },
    },
    extraTokenClaims: async (_ctx, token) => jobs[token.clientId] ?? undefined,
    ttl: { ClientCredentials: ttl },
  };
  if (env('OIDC_CONFORM', '1') === '0') {
    configuration.conformIdTokenClaims = false;
  }
  const provider = new Provider(issuer, configuration);
  provider.use(async (ctx, next) => {
    if (ctx.path === '/me') {
      console.log('userinfo');
    }
    await next();
  });
  server.on('request', provider.callback());
  console.log(`listening ${issuer}`);
});
