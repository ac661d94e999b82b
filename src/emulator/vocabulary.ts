/**
 * The fixed vocabulary the generated sessions are drawn from: agents, groups, companies, customers,
 * notes. Deliberately awkward in places (accents, CJK, emoji, quotes, commas, newlines, tabs,
 * backslashes, empty strings) so that every stage from JSON to CSV/Parquet gets exercised.
 */

/** Owning companies; the third keeps a leading zero on purpose. */
export const COMPANY_IDS = ['7395012', '7395013', '0048211', '8120004'] as const;
export const COMPANY_WEIGHTS = [0.6, 0.22, 0.12, 0.06] as const;

/** Agent groups: `company` indexes COMPANY_IDS, `officeIp` is the office NAT address most of their sessions come from. */
export const GROUPS = [
  { id: 1201, company: 0, officeIp: '198.51.100.17' },
  { id: 1202, company: 0, officeIp: '198.51.100.18' },
  { id: 1305, company: 0, officeIp: '2001:db8:4a1::12' },
  { id: 1410, company: 1, officeIp: '203.0.113.40' },
  { id: 2001, company: 2, officeIp: '192.0.2.201' },
  { id: 2002, company: 3, officeIp: '2001:db8:77:1::5' },
] as const;

const AGENT_NAMES: ReadonlyArray<readonly [name: string, email: string | null]> = [
  ['Anna Schmidt', 'anna.schmidt@example.com'],
  ['José Álvarez', 'jose.alvarez@example.com'],
  ['Zoë Dubois', 'zoe.dubois@example.com'],
  ["Liam O'Connor", 'liam.oconnor@example.com'],
  ['王小明', 'xiaoming.wang@example.cn'],
  ['佐藤 花子', 'hanako.sato@example.jp'],
  ['Søren Kierkegaard-Møller', 'soren.km@example.dk'],
  ['Smith, John', 'john.smith@example.com'],
  ['Ngozi "Zee" Okafor', 'ngozi.okafor@example.com'],
  ['Sam 🚀 Lee', 'sam.lee@example.com'],
  ['Anna-Maria\nBerg', 'annamaria.berg@example.se'],
  ['François Lefèvre', 'francois.lefevre@example.fr'],
  ['Małgorzata Wiśniewska', 'm.wisniewska@example.pl'],
  ['Nguyễn Thị Minh Khai', 'minh.khai@example.vn'],
  ['Олег Петров', 'oleg.petrov@example.com'],
  ['Fatima Al-Sayed', 'fatima.alsayed@example.com'],
  ['Priya Raghunathan', 'priya.r@example.in'],
  ['Ömer Yılmaz', 'omer.yilmaz@example.com.tr'],
  ['Chloé Martin', 'chloe.martin@example.fr'],
  ['Björn Ågren', 'bjorn.agren@example.se'],
  ['Lucía Fernández', 'lucia.fernandez@example.es'],
  ['김민준', 'minjun.kim@example.kr'],
  ['Mark Thompson', 'mark.thompson@example.com'],
  ['Emily Clarke', 'emily.clarke@example.co.uk'],
  ['Tom Baker', 'tom.baker+support@example.com'],
  ['Grace Hopper', 'grace@example.com'],
  ['Ahmed Hassan', 'ahmed.hassan@example.com'],
  ['Ines Costa', ''],
  ['Kofi Mensah', 'kofi.mensah@example.com'],
  ['Helga Nüßlein', 'helga.nuesslein@example.de'],
  ['Ravi Patel', 'ravi.patel@example.com'],
  ['Yuki Tanaka', null],
  ['Dmitri Ivanov', 'd.ivanov@example.com'],
  ['Sofia Rossi', 'sofia.rossi@example.it'],
  ['Support Bot', 'bot@example.com'],
  ['Léa Girard', 'lea.girard@example.fr'],
];

export const AGENTS = AGENT_NAMES.map(([name, email], i) => ({
  id: String(5_500_000 + ((i * 7_919) % 99_991)),
  name,
  email,
  // Uneven group sizes: group 0 is the big first-line team.
  groupIndex: [0, 0, 0, 1, 1, 2, 3, 4, 5][i % 9] as number,
}));

export const SESSION_TYPES = ['remoteSupport', 'unattended', 'remoteView', 'chat', 'screenShare'] as const;
export const SESSION_TYPE_WEIGHTS = [0.55, 0.15, 0.15, 0.1, 0.05] as const;

export const FIRST_NAMES = [
  'Maria', 'Peter', 'Jürgen', 'Ingrid', 'Carlos', 'Aiko', 'Mohammed', 'Olivia', 'Noah', 'Élodie',
  'Sven', 'Chen', 'Fatma', 'Lars', 'Isabella', 'Jan', 'Marta', 'Hiroshi', 'Amara', 'Dylan',
] as const;
export const LAST_NAMES = [
  'Müller', 'García', 'Johansson', 'Kowalski', 'Brown', 'Nakamura', 'Rossi', "D'Angelo", 'Novák',
  'Schäfer', 'Li', 'Okoye', 'Andersen', 'van der Berg', 'Silva', 'Papadopoulos', 'Çelik', 'Ng',
] as const;

/** Companies and oddities used as customer names in about a third of the sessions. */
export const CUSTOMER_ORGS = [
  'Müller GmbH',
  'Société Générale, Paris',
  '株式会社サンプル',
  "O'Reilly & Sons",
  '"Big" Tony\'s Pizza',
  'Acme Corp\nBilling Dept.',
  '🎉 Party Supplies Ltd',
  'Ørsted A/S',
  'Đặng Văn Lâm',
  'Zürich Versicherung AG',
  'ООО «Ромашка»',
  'Smith, Jones & Partners, LLP',
  'Backslash \\ Trading',
  'Tab\tSeparated Inc',
  ' Leading Space Ltd',
  '',
] as const;

export const NOTES = [
  'Customer reports printer offline',
  'Reset password; verified 2FA',
  'Installed updates, rebooted twice.\nIssue resolved.',
  'Customer said "it worked yesterday"',
  'Escalated to tier 2, see ticket #4821',
  'Kunde meldet: Drucker druckt nicht',
  '顧客のPCが起動しない',
  'Fixed 👍',
  'VPN drops every ~5 min, replaced driver',
  'Outlook profile rebuilt; PST at C:\\Users\\admin\\Documents',
  'Call dropped — customer will call back',
  'Line one\r\nLine two\r\nLine three',
  'Columns: a,b,c; quotes: \'single\' and "double"',
  'Slow laptop → cleaned startup items; ≈30% faster',
  'No issue found',
  '',
] as const;

export const DEVICE_TYPES = ['Desktop', 'Laptop', 'Mobile', 'Tablet', ''] as const;
export const DEVICE_TYPE_WEIGHTS = [0.42, 0.36, 0.12, 0.07, 0.03] as const;

export const OPERATING_SYSTEMS = {
  Desktop: ['Windows 11', 'Windows 10', 'macOS 14.5', 'Ubuntu 22.04'],
  Laptop: ['Windows 11', 'Windows 10', 'macOS 15.1', 'macOS 14.5', 'ChromeOS'],
  Mobile: ['Android 14', 'iOS 17.5', 'iOS 18.0', 'Android 13'],
  Tablet: ['iPadOS 17', 'Android 13'],
  '': [''],
} as const satisfies Record<(typeof DEVICE_TYPES)[number], readonly string[]>;

/** First octets of public-looking customer IPv4 addresses. */
export const CUSTOMER_V4_PREFIXES = [81, 84, 91, 95, 104, 151, 176, 185, 188, 203, 212, 217] as const;

/** Relative session starts per UTC hour: quiet nights, a business-hours plateau with a lunch dip. */
export const HOUR_WEIGHTS = [
  0.15, 0.1, 0.08, 0.08, 0.12, 0.3, 0.6, 1.2, 2.6, 4.0, 4.6, 4.5,
  3.6, 4.1, 4.5, 4.2, 3.4, 2.4, 1.4, 0.9, 0.6, 0.4, 0.3, 0.2,
] as const;

/** Relative volume per weekday, Sunday first; averages to 1 over a week. */
export const WEEKDAY_WEIGHTS = [0.25, 1.3, 1.3, 1.3, 1.3, 1.3, 0.25] as const;

/** Pieces of the long case notes (`longNotes`, docs/emulator.md): what agents paste; a note is a run of these, 1–2 KB of UTF-8. */
export const LONG_NOTE_PIECES = [
  'Customer said "it crashed again" right after the update; asked for a "full" refund. ',
  'Path: C:\\Program Files\\Vendor\\app.exe, key HKLM\\Software\\Vendor\\Settings\\ ',
  'Steps:\n\t1. Open settings\n\t2. Reset network\n\t3. Reboot\n',
  'Log excerpt:\r\n\tERROR 0x80070005 "Access denied" at line 42\r\n',
  'Pasted from a terminal: \u0007bell \u0008backspace \u000cform feed \u001b[31mred\u001b[0m done. ',
  'NUL byte here >\u0000< and unit separator >\u001f< and DEL >\u007f< and NEL >\u0085<. ',
  'Line separator >\u2028< paragraph separator >\u2029< BOM >\ufeff<. ',
  'Kunde meldet: Drucker druckt nicht, Treiber neu installiert (Größe 25 MB, Straße 5). ',
  '顧客のPCが起動しない。セーフモードで再起動し、ドライバーを更新しました。',
  'العميل يبلغ عن مشكلة في الطابعة؛ تم إعادة التشغيل. ',
  'ग्राहक ने बताया कि प्रिंटर काम नहीं कर रहा है। ',
  '고객이 VPN 연결 끊김을 보고했습니다. ',
  'Combining: e\u0301 vs é, n\u0303 vs ñ, Å vs A\u030a. ',
  'Fixed 👍🏽 — customer happy 😀🚀; family 👨\u200d👩\u200d👧 and flag 🇩🇪. ',
  'Music 𝄞 and math 𝔸𝔹ℂ outside the BMP. ',
  'JSON pasted: {"key": "value", "list": [1, 2, "three"], "nested": {"a": null}} ',
  'Written-out escapes: \\n \\t \\" \\\\ \\u00e9 \\ud83d (typed, not control characters). ',
  "Quotes: 'single', \"double\", `back`, «guillemets», „German“, 「corner」. ",
  'Columns: a,b,c;d|e\tf ',
  'Slow laptop → cleaned startup items; ≈30 % faster; ½ the boot time. ',
  'Ends with a backslash \\',
  ' ',
] as const;
