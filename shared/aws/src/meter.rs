//! What the DynamoDB adapter consumes, per request: counted requests and capacity units computed
//! from item sizes by DynamoDB's published rules (writes: 1 WCU per started KB, doubled inside a
//! transaction; strongly consistent reads: 1 RCU per started 4 KB of the whole response, half for
//! eventually consistent GSI queries; every META write also replicates to the two GSIs). moto's
//! own ConsumedCapacity is approximate (and absent for transactions), so it is not used.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use parking_lot::Mutex;

/// Totals since the meter was created.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Usage {
    pub read_requests: u64,
    pub write_requests: u64,
    pub read_units: f64,
    pub write_units: f64,
    /// Writes to the two ListTasks GSIs caused by task (META) writes.
    pub gsi_write_units: f64,
}

impl Usage {
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            read_requests: self.read_requests - earlier.read_requests,
            write_requests: self.write_requests - earlier.write_requests,
            read_units: self.read_units - earlier.read_units,
            write_units: self.write_units - earlier.write_units,
            gsi_write_units: self.gsi_write_units - earlier.gsi_write_units,
        }
    }
}

#[derive(Debug, Default)]
pub struct Meter(Mutex<Usage>);

impl Meter {
    pub fn usage(&self) -> Usage {
        *self.0.lock()
    }

    pub(super) fn read(&self, bytes: usize, consistent: bool) {
        let units = (bytes.max(1)).div_ceil(4096) as f64;
        let mut u = self.0.lock();
        u.read_requests += 1;
        u.read_units += if consistent { units } else { units / 2.0 };
    }

    /// One write request putting `items` (sizes in bytes); `meta_writes` of them are task items
    /// that the GSIs replicate.
    pub(super) fn write(&self, items: &[usize], transactional: bool, meta_writes: &[usize]) {
        let factor = if transactional { 2.0 } else { 1.0 };
        let mut u = self.0.lock();
        u.write_requests += 1;
        u.write_units += items.iter().map(|b| b.max(&1).div_ceil(1024) as f64 * factor).sum::<f64>();
        u.gsi_write_units += meta_writes.iter().map(|b| 2.0 * b.max(&1).div_ceil(1024) as f64).sum::<f64>();
    }
}

/// DynamoDB's item size: attribute names plus values.
pub fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => n.len().div_ceil(2) + 1,
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::M(m) => 3 + m.iter().map(|(k, v)| k.len() + value_size(v) + 1).sum::<usize>(),
        AttributeValue::L(l) => 3 + l.iter().map(|v| value_size(v) + 1).sum::<usize>(),
        AttributeValue::Ss(l) => l.iter().map(String::len).sum(),
        AttributeValue::Ns(l) => l.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
        AttributeValue::Bs(l) => l.iter().map(|b| b.as_ref().len()).sum(),
        _ => 0,
    }
}
