export {
  type ConnectionsModuleDeps,
  type ConnectionOperations,
  createConnectionsModule,
} from './connections.module.js';
export { type OutboundPolicy, checkOutboundUrl, createOutboundFetch } from './outbound.js';
