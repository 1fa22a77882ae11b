//! A GPU's PCI location, which AMD-SMI and rocprofiler-sdk both report: how a GPU AMD-SMI
//! lists is matched to the SDK's agent. Order would not do: `ROCR_VISIBLE_DEVICES` hides
//! and reorders the SDK's agents, while AMD-SMI always lists every GPU of the node.

use std::fmt;
use std::str::FromStr;

use super::abi::Bdf;

/// Domain, bus, device and function, written `0000:c1:00.0` as `lspci -D` and `amd-smi`
/// write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciLocation {
    pub domain: u32,
    pub bus: u8,
    /// 0 to 31.
    pub device: u8,
    /// 0 to 7.
    pub function: u8,
}

impl PciLocation {
    /// The bus, device and function packed as the KFD topology's `location_id`, which
    /// rocprofiler-sdk's agents carry (beside their `domain`).
    pub fn location_id(self) -> u32 {
        u32::from(self.bus) << 8 | u32::from(self.device) << 3 | u32::from(self.function)
    }

    /// The location of an SDK agent's `domain` and `location_id`.
    pub fn of_agent(domain: u32, location_id: u32) -> PciLocation {
        PciLocation {
            domain,
            bus: (location_id >> 8) as u8,
            device: ((location_id >> 3) & 0x1f) as u8,
            function: (location_id & 0x7) as u8,
        }
    }

    /// The location AMD-SMI's `amdsmi_bdf_t` holds.
    pub fn from_bdf(bdf: Bdf) -> PciLocation {
        let bits = bdf.as_uint;
        PciLocation {
            domain: (bits >> 16) as u32,
            bus: (bits >> 8) as u8,
            device: ((bits >> 3) & 0x1f) as u8,
            function: (bits & 0x7) as u8,
        }
    }

    /// This location as AMD-SMI's `amdsmi_bdf_t`.
    pub fn to_bdf(self) -> Bdf {
        Bdf {
            as_uint: u64::from(self.domain) << 16 | u64::from(self.location_id()),
        }
    }
}

impl fmt::Display for PciLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PciLocation {
            domain,
            bus,
            device,
            function,
        } = self;
        write!(f, "{domain:04x}:{bus:02x}:{device:02x}.{function}")
    }
}

/// Why a PCI location does not read.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a PCI location: write it as domain:bus:device.function, e.g. 0000:c1:00.0")]
pub struct PciLocationError(String);

impl FromStr for PciLocation {
    type Err = PciLocationError;

    fn from_str(text: &str) -> Result<PciLocation, PciLocationError> {
        let invalid = || PciLocationError(text.to_string());
        let (domain, rest) = text.split_once(':').ok_or_else(invalid)?;
        let (bus, rest) = rest.split_once(':').ok_or_else(invalid)?;
        let (device, function) = rest.split_once('.').ok_or_else(invalid)?;
        let hex = |s: &str, max: u32| {
            u32::from_str_radix(s, 16)
                .ok()
                .filter(|&v| v <= max && !s.is_empty())
        };
        Ok(PciLocation {
            domain: hex(domain, u32::MAX).ok_or_else(invalid)?,
            bus: hex(bus, 0xff).ok_or_else(invalid)? as u8,
            device: hex(device, 0x1f).ok_or_else(invalid)? as u8,
            function: hex(function, 7).ok_or_else(invalid)? as u8,
        })
    }
}

impl<'de> serde::Deserialize<'de> for PciLocation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PciLocation, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_reads_and_prints_as_amd_smi_writes_it() {
        let location: PciLocation = "0001:c1:1f.7".parse().unwrap();
        assert_eq!(
            location,
            PciLocation {
                domain: 1,
                bus: 0xc1,
                device: 0x1f,
                function: 7
            }
        );
        assert_eq!(location.to_string(), "0001:c1:1f.7");
        for bad in [
            "c1:00.0",
            "0000:c1:20.0",
            "0000:c1:00.8",
            "0000:1c1:00.0",
            "0000::00.0",
        ] {
            let e = bad.parse::<PciLocation>().unwrap_err().to_string();
            assert!(e.contains(&format!("`{bad}` is not a PCI location")), "{e}");
        }
    }

    #[test]
    fn amd_smi_and_the_sdk_pack_the_same_location_alike() {
        let location: PciLocation = "0002:c1:1f.5".parse().unwrap();
        // amdsmi_bdf_t: function bits 0-2, device 3-7, bus 8-15, domain 16-63.
        assert_eq!(location.to_bdf().as_uint, 0x2_c1fd);
        assert_eq!(PciLocation::from_bdf(location.to_bdf()), location);
        // The KFD topology's location_id: bus << 8 | device << 3 | function.
        assert_eq!(location.location_id(), 0xc1fd);
        assert_eq!(PciLocation::of_agent(2, location.location_id()), location);
    }
}
