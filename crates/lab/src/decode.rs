//! tshark over a pcap: frames per protocol, InfiniBand opcodes, malformed
//! frames and expert errors.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::host;

/// Wireshark's expert severity "error" (PI_ERROR).
const SEVERITY_ERROR: u64 = 0x0080_0000;

/// What tshark made of a capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodeSummary {
    /// Frames in the file.
    pub frames: u64,
    /// Frames per protocol of `frame.protocols` (`eth`, `ip`, `ipv6`,
    /// `udp`, `infiniband` for RoCEv2 on UDP 4791, ...).
    pub protocols: BTreeMap<String, u64>,
    /// RoCE frames per BTH opcode (`infiniband.bth.opcode`, e.g. 4 = RC
    /// SEND only, 17 = RC ACK, 100 = UD SEND only for CM MADs).
    pub ib_opcodes: BTreeMap<u8, u64>,
    /// Frame numbers tshark marks malformed (`_ws.malformed`).
    pub malformed: Vec<u64>,
    /// Expert infos of severity error, as "frame N: message".
    pub expert_errors: Vec<String>,
}

impl DecodeSummary {
    /// Frames that decode as RoCEv2 (InfiniBand over UDP 4791).
    pub fn roce_frames(&self) -> u64 {
        self.protocols.get("infiniband").copied().unwrap_or(0)
    }

    /// Whether nothing is malformed and no expert error was raised.
    pub fn is_clean(&self) -> bool {
        self.malformed.is_empty() && self.expert_errors.is_empty()
    }
}

/// Runs tshark over `pcap` and summarises it.
pub fn decode_check(pcap: &Path) -> Result<DecodeSummary> {
    let mut tshark = host::command(host::TSHARK)?;
    tshark
        .arg("-r")
        .arg(pcap)
        .args([
            "-n",
            "-T",
            "fields",
            "-E",
            "separator=/t",
            "-E",
            "occurrence=a",
        ])
        .args(["-E", "aggregator=\u{1f}"])
        .args(["-e", "frame.number", "-e", "frame.protocols"])
        .args(["-e", "infiniband.bth.opcode", "-e", "_ws.expert.severity"])
        .args(["-e", "_ws.expert.message"]);
    let text = host::run(&mut tshark).map_err(|error| match error {
        Error::Command { output, .. }
            if output.contains("isn't a capture file")
                || output.contains("appears to have been cut short") =>
        {
            Error::Guest(format!(
                "tshark cannot read {}: {}",
                pcap.display(),
                output.trim()
            ))
        }
        other => other,
    })?;
    Ok(summarise(&text))
}

fn summarise(text: &str) -> DecodeSummary {
    let mut summary = DecodeSummary::default();
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let field = |at: usize| fields.get(at).copied().unwrap_or("");
        let number: u64 = field(0).parse().unwrap_or(0);
        summary.frames += 1;
        for protocol in field(1).split(':').filter(|p| !p.is_empty()) {
            *summary.protocols.entry(protocol.to_owned()).or_default() += 1;
            if protocol == "_ws.malformed" {
                summary.malformed.push(number);
            }
        }
        for opcode in field(2)
            .split('\u{1f}')
            .filter_map(|o| o.parse::<u8>().ok())
        {
            *summary.ib_opcodes.entry(opcode).or_default() += 1;
        }
        let messages: Vec<&str> = field(4).split('\u{1f}').collect();
        for (at, severity) in field(3).split('\u{1f}').enumerate() {
            let value = severity.strip_prefix("0x").map_or_else(
                || severity.parse().ok(),
                |hex| u64::from_str_radix(hex, 16).ok(),
            );
            if value.is_some_and(|value| value >= SEVERITY_ERROR) {
                let message = messages.get(at).copied().unwrap_or("(no message)");
                summary
                    .expert_errors
                    .push(format!("frame {number}: {message}"));
            }
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_protocols_opcodes_and_errors() {
        let text = "1\teth:ethertype:ip:udp:infiniband\t4\t\t\n\
                    2\teth:ethertype:ip:udp:infiniband:_ws.malformed\t17\t8388608\u{1f}4194304\tMalformed Packet\u{1f}note\n\
                    3\teth:ethertype:arp\t\t\t\n";
        let summary = summarise(text);
        assert_eq!(summary.frames, 3);
        assert_eq!(summary.roce_frames(), 2);
        assert_eq!(summary.protocols["eth"], 3);
        assert_eq!(summary.ib_opcodes[&4], 1);
        assert_eq!(summary.malformed, [2]);
        assert_eq!(summary.expert_errors, ["frame 2: Malformed Packet"]);
        assert!(!summary.is_clean());
    }
}
