public enum AuditPolicyPlaceholder {}
