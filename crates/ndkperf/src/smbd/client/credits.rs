//! SMB2 credits and message ids ([MS-SMB2] 3.2.4.1.5, 3.2.5.1.4): each
//! request takes CreditCharge consecutive message ids out of the window
//! the server granted; each response grants CreditResponse more.

use crate::error::{Error, Result};

/// The client's side of the credit window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credits {
    /// Credits granted and not yet spent.
    available: u32,
    /// The next MessageId to use.
    next_message_id: u64,
}

impl Default for Credits {
    /// A new connection: one credit, MessageId 0 (the NEGOTIATE).
    fn default() -> Self {
        Self {
            available: 1,
            next_message_id: 0,
        }
    }
}

impl Credits {
    /// Spends `charge` credits: returns the MessageId of the request
    /// (it also uses the next `charge - 1` ids).
    pub fn take(&mut self, charge: u16) -> Result<u64> {
        let charge = u32::from(charge.max(1));
        if charge > self.available {
            return Err(Error::msg(format!(
                "out of SMB2 credits: the request costs {charge}, the server granted {} not yet used",
                self.available
            )));
        }
        self.available -= charge;
        let id = self.next_message_id;
        self.next_message_id += u64::from(charge);
        Ok(id)
    }

    /// Adds the CreditResponse of a response.
    pub fn grant(&mut self, granted: u16) {
        self.available += u32::from(granted);
    }

    /// Credits on hand.
    pub fn available(&self) -> u32 {
        self.available
    }

    /// The MessageId the next request gets.
    pub fn next_message_id(&self) -> u64 {
        self.next_message_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_advance_by_the_charge_and_credits_run_out() {
        let mut c = Credits::default();
        assert_eq!(c.take(1).unwrap(), 0);
        assert!(
            c.take(1).is_err(),
            "one credit before the NEGOTIATE response"
        );
        c.grant(20);
        assert_eq!(c.take(16).unwrap(), 1);
        assert_eq!(c.take(1).unwrap(), 17);
        assert_eq!(c.available(), 3);
        assert!(c.take(4).is_err());
        assert_eq!(c.next_message_id(), 18);
    }
}
