/** The config served when GATEWAY_CONFIG is unset: the mock provider only, no keys needed. */
export const DEMO_CONFIG_YAML = `
model_list:
  - model_name: demo-chat
    params: { model: mock/chat-small, mock_stream_chunks: 8 }
  - model_name: gpt-4o-mini
    params: { model: mock/gpt-4o-mini }
  - model_name: demo-embed
    params: { model: mock/embed-small, mock_embedding_dimensions: 16 }
route_rules:
  - provider: mock
    models: ["*"]
`;
