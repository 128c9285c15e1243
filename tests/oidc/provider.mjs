// The OpenID provider tfmirror's tests sign in against: npm's oidc-provider
// (a certified implementation), on loopback with TLS. It mints what the
// mirror meets in the field: a CI job's token (a JWT access token from the
// client credentials grant, with the claims GitHub Actions puts in its
// job tokens), and a person's ID token (authorization code with PKCE,
// through the provider's own login and consent pages).
//
// Settings come from the environment:
//   OIDC_PORT      the port to listen on (0: any; the chosen one is printed)
//   OIDC_CERT, OIDC_KEY  the TLS certificate and key (PEM files)
//   OIDC_AUDIENCE  the audience (resource) CI tokens are minted for
//   OIDC_REDIRECT  the mirror's sign-in callback URL
//   OIDC_KID       the key IDs' stem: a new stem is a key rotation
//   OIDC_TTL       CI tokens' lifetime in seconds (default 300)
// Once it listens, it prints one line: `listening <issuer URL>`.

import { readFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import https from 'node:https';
import Provider from 'oidc-provider';

const env = (name, fallback) => process.env[name] ?? fallback;
const kid = env('OIDC_KID', 'k1');
const audience = env('OIDC_AUDIENCE', 'https://mirror.test');
const ttl = Number(env('OIDC_TTL', '300'));

function key(type, options, alg, id) {
  const { privateKey } = generateKeyPairSync(type, options);
  return { ...privateKey.export({ format: 'jwk' }), kid: id, alg, use: 'sig' };
}

// Claims of the CI jobs, by client: what GitHub Actions puts in a job's
// token for a workflow on the main branch of acme/infra, and for a
// repository of another owner.
const jobs = {
  'acme-infra-main': {
    repository: 'acme/infra', repository_owner: 'acme', ref: 'refs/heads/main',
    workflow: 'deploy', job_workflow_ref: 'acme/infra/.github/workflows/deploy.yml@refs/heads/main',
  },
  'other-owner': {
    repository: 'evil/infra', repository_owner: 'evil', ref: 'refs/heads/main', workflow: 'deploy',
  },
};

// The people who may sign in, with their groups.
const people = {
  alice: ['platform-approvers', 'dev'],
  bob: ['dev'],
};

const server = https.createServer({
  cert: readFileSync(env('OIDC_CERT')),
  key: readFileSync(env('OIDC_KEY')),
});

server.listen(Number(env('OIDC_PORT', '0')), '127.0.0.1', () => {
  const issuer = `https://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    jwks: {
      keys: [
        key('ec', { namedCurve: 'P-256' }, 'ES256', `${kid}-ec`),
        key('rsa', { modulusLength: 2048 }, 'RS256', `${kid}-rsa`),
      ],
    },
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
        redirect_uris: [env('OIDC_REDIRECT', 'https://127.0.0.1/-/signin/callback')],
      },
    ],
    cookies: { keys: ['tfmirror-test-cookies'] },
    claims: { openid: ['sub'], profile: ['name', 'groups'], email: ['email'] },
    conformIdTokenClaims: false,
    findAccount: async (_ctx, id) => ({
      accountId: id,
      claims: async () => ({
        sub: id, name: id, email: `${id}@example.test`, groups: people[id] ?? [],
      }),
    }),
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => ({
          scope: 'mirror',
          audience: resource,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    extraTokenClaims: async (_ctx, token) => jobs[token.clientId] ?? undefined,
    ttl: { ClientCredentials: ttl },
  });
  server.on('request', provider.callback());
  console.log(`listening ${issuer}`);
});
