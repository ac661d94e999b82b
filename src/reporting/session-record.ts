/** A session record as the reporting endpoint returns it (see the interface document, "Session"). */
export interface SessionRecord {
  id: string;
  companyId?: string | null;
  pin?: string | null;
  /** Seconds since the UNIX epoch. */
  started?: number | null;
  /** Seconds since the UNIX epoch; null while the session runs. */
  ended?: number | null;
  /** ended - started, in seconds. */
  duration?: number | null;
  sessionType?: string | null;
  recording?: boolean | null;
  recordingUrl?: string | null;
  agent?: { id?: string | null; name?: string | null; email?: string | null } | null;
  agentGroupId?: number | null;
  agentIp?: string | null;
  customerIp?: string | null;
  externalFields?: {
    customerName?: string | null;
    externalCaseId?: string | null;
    notes?: string | null;
    accountingInfo?: string | null;
    customerDeviceType?: string | null;
    customerOs?: string | null;
  } | null;
}

export const EXTERNAL_FIELD_NAMES = [
  'customerName', 'externalCaseId', 'notes', 'accountingInfo', 'customerDeviceType', 'customerOs',
] as const;
export const AGENT_FIELD_NAMES = ['id', 'name', 'email'] as const;
