/**
 * How chain.ts reads the SDK's debug lines into a failure's message, and
 * what it redacts. The chain itself, with the SDK and the fake STS, is
 * test/bedrock-chain-sdk.test.ts; through the gateway,
 * test/bedrock-credential-chain.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { redactCredentials, sourcesTried } from './chain.js';

const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6Z3c6c3cifQ.c2lnLTAxMjM0NTY3ODlhYmNkZWY';

describe('sourcesTried and redactCredentials', () => {
  it('read the SDK lines as they come: a remote source is named by the provider it picked; the chain end is no reason', () => {
    const lines = [
      '@aws-sdk/credential-provider-node - defaultProvider::fromTokenFile',
      '@aws-sdk/credential-provider-web-identity - fromTokenFile',
      '@smithy/property-provider -> Web identity configuration not specified',
      '@aws-sdk/credential-provider-node - defaultProvider::remoteProvider',
      '@aws-sdk/credential-provider-node - remoteProvider::fromHttp/fromContainerMetadata',
      '@aws-sdk/credential-provider-http - fromHttp',
      '@smithy/property-provider (!) Could not load credentials from any providers',
    ];
    const err = Object.assign(new Error('Server responded with status: 401'), { name: 'CredentialsProviderError' });
    expect(sourcesTried(lines, err)).toEqual({
      message: 'the AWS credential chain gave no credentials; tried fromTokenFile (Web identity configuration not specified), fromHttp/fromContainerMetadata (CredentialsProviderError: Server responded with status: 401)',
      tried: ['fromTokenFile', 'fromHttp/fromContainerMetadata'],
    });
    expect(sourcesTried([], new Error('boom'))).toEqual({ message: 'the AWS credential chain gave no credentials: Error: boom', tried: [] });
  });

  it('a reason is one line, without its full stop, cut at 300 characters; a secret in it is redacted', () => {
    const lines = ['x - defaultProvider::fromIni', `@smithy/property-provider -> line one.\n  line two ${'y'.repeat(400)} ASIAIOSFODNN7EXAMPLE.`];
    const { message } = sourcesTried(lines, new Error('Could not load credentials from any providers'));
    expect(message).toMatch(/^the AWS credential chain gave no credentials; tried fromIni \(line one\. line two y+…\)$/);
    expect(message.length).toBeLessThan(400);
    const secret = sourcesTried(['x - defaultProvider::fromIni', `@smithy/property-provider -> bad key ASIAIOSFODNN7EXAMPLE with ${TOKEN}`], new Error('x')).message;
    expect(secret).toBe('the AWS credential chain gave no credentials; tried fromIni (bad key [redacted] with [redacted])');
  });

  it('redact access key ids, bearer tokens and long opaque runs with a digit, + or =, and keep words and paths', () => {
    const secret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    expect(redactCredentials(`key ASIAIOSFODNN7EXAMPLE secret ${secret} Bearer abc.def token ${TOKEN}`)).toBe('key [redacted] secret [redacted] Bearer [redacted] token [redacted]');
    expect(redactCredentials('in configuration/credentials file(s) at /var/run/secrets/eks.amazonaws.com/serviceaccount/token')).toBe('in configuration/credentials file(s) at /var/run/secrets/eks.amazonaws.com/serviceaccount/token');
  });
});
