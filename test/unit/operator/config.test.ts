// The operator's configuration: the same checks as the API's (api/config.ts), so a
// typo in the chart's values or in a shell stops start-up with the variable named.
import { expect } from 'chai';
import { ConfigError } from '../../../api/config.js';
import { DEFAULT_BOX_IMAGE, loadOperatorConfig } from '../../../operator/config.js';

describe('operator configuration', function () {
  it('defaults', function () {
    expect(loadOperatorConfig({})).to.include({
      boxImage: DEFAULT_BOX_IMAGE,
      boxImagePullPolicy: 'IfNotPresent',
      pinBoxImage: false,
      boxIsolation: 'Database',
      leaseName: 'boxauth-operator',
      healthPort: 8081,
      healthHost: '0.0.0.0',
      logLevel: 'info',
    });
    expect(loadOperatorConfig({ POD_NAMESPACE: 'boxauth-system' }).namespace).to.equal('boxauth-system');
  });

  it('refuses bad values, naming the variable and what it may be', function () {
    const refused = (env: Record<string, string>, message: RegExp): void => {
      expect(() => loadOperatorConfig(env), JSON.stringify(env)).to.throw(ConfigError, message);
    };
    refused({ BOXAUTH_LOG_LEVEL: 'loud' }, /^BOXAUTH_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "loud"$/);
    refused(
      { BOXAUTH_OPERATOR_BOX_IMAGE_PULL_POLICY: 'ifnotpresent' },
      /^BOXAUTH_OPERATOR_BOX_IMAGE_PULL_POLICY must be one of Always, IfNotPresent, Never, got "ifnotpresent"$/,
    );
    refused({ BOXAUTH_OPERATOR_HEALTH_HOST: 'not a host' }, /^BOXAUTH_OPERATOR_HEALTH_HOST must be an IP address or a host name/);
    refused({ BOXAUTH_OPERATOR_HEALTH_PORT: '80800' }, /^BOXAUTH_OPERATOR_HEALTH_PORT must be an integer between 0 and 65535/);
    refused({ BOXAUTH_OPERATOR_LEASE_NAME: 'Boxauth Operator' }, /^BOXAUTH_OPERATOR_LEASE_NAME must be a Lease name/);
    refused({ BOXAUTH_OPERATOR_NAMESPACE: 'team_a' }, /^BOXAUTH_OPERATOR_NAMESPACE must be a namespace name/);
    refused({ BOXAUTH_OPERATOR_WORKERS: '0' }, /^BOXAUTH_OPERATOR_WORKERS must be an integer between 1 and 64/);
    refused({ BOXAUTH_OPERATOR_PIN_BOX_IMAGE: 'yes please' }, /BOXAUTH_OPERATOR_PIN_BOX_IMAGE/);
    refused({ DATABASE_URL: 'mysql://db' }, /^DATABASE_URL must be a postgres:\/\/ URL$/);
    refused(
      { BOXAUTH_OPERATOR_BOX_ISOLATION: 'database' },
      /^BOXAUTH_OPERATOR_BOX_ISOLATION must be one of Database, Schema, got "database"$/,
    );
    refused(
      { BOXAUTH_OPERATOR_BOX_DATABASE_POOLER_HOST: 'postgres://pooler:5432' },
      /^BOXAUTH_OPERATOR_BOX_DATABASE_POOLER_HOST must be host or host:port, got "postgres:\/\/pooler:5432"$/,
    );
  });

  it('takes good values as they are', function () {
    expect(
      loadOperatorConfig({
        BOXAUTH_LOG_LEVEL: 'debug',
        BOXAUTH_OPERATOR_BOX_IMAGE_PULL_POLICY: 'Never',
        BOXAUTH_OPERATOR_HEALTH_HOST: '::1',
        BOXAUTH_OPERATOR_LEASE_NAME: 'boxauth.operator-2',
        BOXAUTH_OPERATOR_NAMESPACE: 'team-a',
        BOXAUTH_OPERATOR_PIN_BOX_IMAGE: 'true',
        BOXAUTH_OPERATOR_BOX_DATABASE_HOST: 'db-rw.boxauth-system.svc:5432',
        BOXAUTH_OPERATOR_BOX_DATABASE_POOLER_HOST: 'db-pooler.boxauth-system.svc',
        BOXAUTH_OPERATOR_BOX_ISOLATION: 'Schema',
        POD_NAMESPACE: 'ignored',
      }),
    ).to.include({
      boxDatabaseHost: 'db-rw.boxauth-system.svc:5432',
      boxDatabasePoolerHost: 'db-pooler.boxauth-system.svc',
      boxIsolation: 'Schema',
      logLevel: 'debug',
      boxImagePullPolicy: 'Never',
      healthHost: '::1',
      leaseName: 'boxauth.operator-2',
      namespace: 'team-a',
      pinBoxImage: true,
    });
  });
});
