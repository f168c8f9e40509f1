//! [`Field`]: one named value of a resource as diff shows it, the unit
//! every resource's state is compared in.

use serde_json::Value;

/// One named value of a resource, as diff shows it (`null`: none).
pub type Field = (&'static str, Value);
