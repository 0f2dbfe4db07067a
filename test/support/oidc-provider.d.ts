// The provider library ships no types; the tests use it through `any`.
declare module "oidc-provider" {
  const Provider: new (issuer: string, configuration: Record<string, unknown>) => any;
  export default Provider;
}
