import { DIALECTS } from '../helpers/databases.js';
import { conversationSearchContract } from './conversation-search.contract.js';

// The same contract on migrated SQLite and PostgreSQL: same fixtures, same hits, same order.
for (const dialect of DIALECTS) conversationSearchContract(dialect);
