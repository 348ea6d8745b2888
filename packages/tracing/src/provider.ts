// The tracer provider both services build when TRACING_ENABLED is on: the resource attributes from the
// TRACING_SERVICE_* settings, parent-based ratio sampling, and a batching OTLP exporter (HTTP/JSON or
// gRPC, loaded only when tracing is on; the destination comes from the standard OTEL_EXPORTER_OTLP_*
// variables the exporters read themselves).
import { randomUUID } from 'node:crypto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type SpanExporter } from '@opentelemetry/sdk-trace-base';

export interface TracerProviderOptions {
  readonly protocol: 'http' | 'grpc';
  readonly serviceName: string;
  readonly serviceNamespace: string;
  /** Empty: a random version 4 UUID. */
  readonly serviceInstanceId: string;
  /** Share of new traces sampled (0–1). */
  readonly samplingRate: number;
}

export interface TracerProviderDeps {
  /** Replaces the OTLP exporter (tests). */
  readonly exporter?: SpanExporter | undefined;
  /** Replaces randomUUID for the instance id (tests). */
  readonly uuid?: (() => string) | undefined;
}

async function createExporter(protocol: 'http' | 'grpc'): Promise<SpanExporter> {
  if (protocol === 'grpc') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-grpc');
    return new OTLPTraceExporter();
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  return new OTLPTraceExporter();
}

/** The provider, and the resource attributes it carries (for the start-up log line). */
export async function createTracerProvider(opts: TracerProviderOptions, deps: TracerProviderDeps = {}): Promise<{ provider: BasicTracerProvider; attributes: Record<string, string> }> {
  const attributes: Record<string, string> = {
    'service.name': opts.serviceName,
    'service.instance.id': opts.serviceInstanceId !== '' ? opts.serviceInstanceId : (deps.uuid ?? randomUUID)(),
  };
  if (opts.serviceNamespace !== '') attributes['service.namespace'] = opts.serviceNamespace;
  const exporter = deps.exporter ?? (await createExporter(opts.protocol));
  const provider = new BasicTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes(attributes)),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(opts.samplingRate) }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  return { provider, attributes };
}
