// Kiln's own version, reported by /api/v1/health and `kiln --version`.
export const kilnVersion = '0.1.0';
