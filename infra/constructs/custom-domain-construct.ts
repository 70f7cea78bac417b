import {
  type DomainName,
  EndpointType,
  type RestApi,
  SecurityPolicy,
} from 'aws-cdk-lib/aws-apigateway'
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager'
import { ARecord, HostedZone, RecordTarget } from 'aws-cdk-lib/aws-route53'
import { ApiGatewayDomain } from 'aws-cdk-lib/aws-route53-targets'
import type { Construct } from 'constructs'
import type { CustomDomainConfig } from '#infra/config/stage-config.ts'

/**
 * The API at the root of a custom domain, so the base address is https://{domain}/v1, with an
 * alias record when the hosted zone is known. The certificate, zone and record are created in
 * `scope` itself (see PetstoreApi), the domain under the API.
 */
export const addCustomDomain = (
  scope: Construct,
  api: RestApi,
  { domainName, certificateArn, hostedZoneId, hostedZoneName }: CustomDomainConfig,
): DomainName => {
  const domain = api.addDomainName('CustomDomain', {
    domainName,
    certificate: Certificate.fromCertificateArn(scope, 'Certificate', certificateArn),
    endpointType: EndpointType.REGIONAL,
    securityPolicy: SecurityPolicy.TLS_1_2,
  })
  if (hostedZoneId && hostedZoneName) {
    new ARecord(scope, 'DomainAlias', {
      zone: HostedZone.fromHostedZoneAttributes(scope, 'HostedZone', {
        hostedZoneId,
        zoneName: hostedZoneName,
      }),
      recordName: domainName,
      target: RecordTarget.fromAlias(new ApiGatewayDomain(domain)),
    })
  }
  return domain
}
