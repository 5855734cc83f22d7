/**
 * `GET /v1/models/{model}` (CONTRACT.md, HTTP; issue 24, point 5): the `openai` SDK's
 * `models.retrieve`, which was 404 `route_not_found`.
 */
import { NotFoundError, AuthenticationError } from 'openai';
import { describe, expect, it } from 'vitest';
import { useGateway } from './support/gateway.js';

const { gw } = useGateway({
  upstreams: 0,
  gateway: {
    workers: 0,
    yaml: `
model_list:
  - model_name: mock-chat
    params: { model: mock/chat-small }
  - model_name: team/chat
    params: { model: mock/chat-team }
route_rules:
  - provider: openai
    models: ["gpt-*"]
    params: { api_base: http://127.0.0.1:9/v1, api_key: sk-x }
`,
  },
});

describe('GET /v1/models/{model}', () => {
  it('the SDK retrieves an alias as the list shows it, a slash in the name included', async () => {
    const client = gw.client();
    const list = await client.models.list();
    for (const id of ['mock-chat', 'team/chat']) {
      const model = await client.models.retrieve(id);
      expect(model).toEqual(list.data.find((m) => m.id === id));
      expect(model).toMatchObject({ id, object: 'model', owned_by: 'mock' });
    }
  });

  it('an unknown name, or one routed only by route_rules, is 404 model_not_found', async () => {
    for (const id of ['no-such-model', 'openai/gpt-4o']) {
      const err = await gw.client().models.retrieve(id).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotFoundError);
      expect((err as NotFoundError).error).toMatchObject({ code: 'model_not_found', type: 'gateway_error' });
    }
  });

  it('needs the bearer token', async () => {
    const err = await gw.client({ apiKey: 'wrong' }).models.retrieve('mock-chat').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
  });
});
