//! `rte_flow` rules that steer an application class to its own RX queue:
//! pattern `eth / ipv4 [src, dst masked] / udp|tcp [ports]`, action
//! `QUEUE index`. Built in Rust (so the structs can be checked field by
//! field without a NIC), validated with `rte_flow_validate`, created, and
//! destroyed at shutdown. PMDs without flow support refuse at validation;
//! the caller then uses software classification with the same semantics.

use super::{sys, DpdkError};
use crate::pipeline::classes::Match;
use std::ffi::CStr;

/// The structs one rule points at; kept alive (boxed, stable addresses)
/// for as long as DPDK may read them.
pub struct FlowRule {
    pub attr: sys::rte_flow_attr,
    pub ipv4_spec: sys::rte_flow_item_ipv4,
    pub ipv4_mask: sys::rte_flow_item_ipv4,
    pub udp_spec: sys::rte_flow_item_udp,
    pub udp_mask: sys::rte_flow_item_udp,
    pub tcp_spec: sys::rte_flow_item_tcp,
    pub tcp_mask: sys::rte_flow_item_tcp,
    pub queue: sys::rte_flow_action_queue,
    /// Item types in pattern order (ends with END).
    pub item_types: Vec<sys::rte_flow_item_type>,
    pattern: Vec<sys::rte_flow_item>,
    actions: Vec<sys::rte_flow_action>,
}

fn mask_bits(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len as u32)
    }
}

impl FlowRule {
    /// Builds the rule for `m` steering to RX queue `queue` (ingress).
    /// Only the fields the match names are masked in; addresses and ports
    /// are in network byte order as rte_flow wants.
    pub fn build(m: &Match, queue: u16) -> Box<FlowRule> {
        let mut r = Box::new(FlowRule {
            attr: sys::rte_flow_attr::default(),
            ipv4_spec: sys::rte_flow_item_ipv4::default(),
            ipv4_mask: sys::rte_flow_item_ipv4::default(),
            udp_spec: sys::rte_flow_item_udp::default(),
            udp_mask: sys::rte_flow_item_udp::default(),
            tcp_spec: sys::rte_flow_item_tcp::default(),
            tcp_mask: sys::rte_flow_item_tcp::default(),
            queue: sys::rte_flow_action_queue { index: queue },
            item_types: Vec::new(),
            pattern: Vec::new(),
            actions: Vec::new(),
        });
        r.attr.set_ingress(1);
        if let Some(p) = m.proto {
            r.ipv4_spec.hdr.next_proto_id = p;
            r.ipv4_mask.hdr.next_proto_id = 0xff;
        }
        if let Some((a, len)) = m.src {
            r.ipv4_spec.hdr.src_addr = u32::from_ne_bytes(a);
            r.ipv4_mask.hdr.src_addr = mask_bits(len).to_be();
        }
        if let Some((a, len)) = m.dst {
            r.ipv4_spec.hdr.dst_addr = u32::from_ne_bytes(a);
            r.ipv4_mask.hdr.dst_addr = mask_bits(len).to_be();
        }
        let l4 = match m.proto {
            Some(crate::pipeline::classes::PROTO_UDP) => Some(sys::RTE_FLOW_ITEM_TYPE_UDP),
            Some(crate::pipeline::classes::PROTO_TCP) => Some(sys::RTE_FLOW_ITEM_TYPE_TCP),
            _ => None,
        };
        if let Some(sp) = m.src_port {
            r.udp_spec.hdr.src_port = sp.to_be();
            r.udp_mask.hdr.src_port = 0xffff;
            r.tcp_spec.hdr.src_port = sp.to_be();
            r.tcp_mask.hdr.src_port = 0xffff;
        }
        if let Some(dp) = m.dst_port {
            r.udp_spec.hdr.dst_port = dp.to_be();
            r.udp_mask.hdr.dst_port = 0xffff;
            r.tcp_spec.hdr.dst_port = dp.to_be();
            r.tcp_mask.hdr.dst_port = 0xffff;
        }
        r.item_types = vec![sys::RTE_FLOW_ITEM_TYPE_ETH, sys::RTE_FLOW_ITEM_TYPE_IPV4];
        if let Some(t) = l4 {
            r.item_types.push(t);
        }
        r.item_types.push(sys::RTE_FLOW_ITEM_TYPE_END);

        // Pointers into the box: stable for its lifetime.
        let ipv4_spec = &r.ipv4_spec as *const _ as *const std::ffi::c_void;
        let ipv4_mask = &r.ipv4_mask as *const _ as *const std::ffi::c_void;
        let (l4_spec, l4_mask) = if l4 == Some(sys::RTE_FLOW_ITEM_TYPE_UDP) {
            (
                &r.udp_spec as *const _ as *const std::ffi::c_void,
                &r.udp_mask as *const _ as *const std::ffi::c_void,
            )
        } else {
            (
                &r.tcp_spec as *const _ as *const std::ffi::c_void,
                &r.tcp_mask as *const _ as *const std::ffi::c_void,
            )
        };
        let mut pattern = Vec::new();
        for &t in &r.item_types {
            let mut item = sys::rte_flow_item {
                type_: t,
                ..Default::default()
            };
            if t == sys::RTE_FLOW_ITEM_TYPE_IPV4 {
                item.spec = ipv4_spec;
                item.mask = ipv4_mask;
            } else if t == sys::RTE_FLOW_ITEM_TYPE_UDP || t == sys::RTE_FLOW_ITEM_TYPE_TCP {
                item.spec = l4_spec;
                item.mask = l4_mask;
            }
            pattern.push(item);
        }
        r.pattern = pattern;
        let queue_conf = &r.queue as *const _ as *const std::ffi::c_void;
        r.actions = vec![
            sys::rte_flow_action {
                type_: sys::RTE_FLOW_ACTION_TYPE_QUEUE,
                conf: queue_conf,
            },
            sys::rte_flow_action {
                type_: sys::RTE_FLOW_ACTION_TYPE_END,
                conf: std::ptr::null(),
            },
        ];
        r
    }

    fn error_text(call: &str, ret: i32, err: &sys::rte_flow_error) -> DpdkError {
        let mut e = DpdkError::from_ret(call, ret);
        if !err.message.is_null() {
            // SAFETY: the PMD sets message to a static NUL-terminated string.
            let msg = unsafe { CStr::from_ptr(err.message) }
                .to_string_lossy()
                .into_owned();
            if msg != e.text {
                e.text = format!("{} ({msg})", e.text);
            }
        }
        e
    }

    /// `rte_flow_validate` on `port`.
    pub fn validate(&self, port: u16) -> Result<(), DpdkError> {
        let mut err = sys::rte_flow_error::default();
        // SAFETY: attr, pattern and actions point into self (alive for the
        // call); arrays end with END entries.
        let ret = unsafe {
            sys::rte_flow_validate(
                port,
                &self.attr,
                self.pattern.as_ptr(),
                self.actions.as_ptr(),
                &mut err,
            )
        };
        if ret != 0 {
            return Err(Self::error_text(
                &format!("rte_flow_validate(port {port})"),
                ret,
                &err,
            ));
        }
        Ok(())
    }

    /// `rte_flow_create` on `port`; the rule must outlive the flow.
    pub fn create(&self, port: u16) -> Result<InstalledFlow, DpdkError> {
        let mut err = sys::rte_flow_error::default();
        // SAFETY: as validate().
        let flow = unsafe {
            sys::rte_flow_create(
                port,
                &self.attr,
                self.pattern.as_ptr(),
                self.actions.as_ptr(),
                &mut err,
            )
        };
        if flow.is_null() {
            return Err(Self::error_text(
                &format!("rte_flow_create(port {port})"),
                -super::rte_errno(),
                &err,
            ));
        }
        Ok(InstalledFlow { port, flow })
    }
}

/// A created flow rule; destroy it before the port closes.
pub struct InstalledFlow {
    pub port: u16,
    flow: *mut sys::rte_flow,
}

// SAFETY: the handle is only used by the main thread for destroy.
unsafe impl Send for InstalledFlow {}

impl InstalledFlow {
    pub fn destroy(self) -> Result<(), DpdkError> {
        let mut err = sys::rte_flow_error::default();
        // SAFETY: a flow created on this port and destroyed once.
        let ret = unsafe { sys::rte_flow_destroy(self.port, self.flow, &mut err) };
        if ret != 0 {
            return Err(FlowRule::error_text(
                &format!("rte_flow_destroy(port {})", self.port),
                ret,
                &err,
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::classes::parse_class;

    #[test]
    fn udp_dst_port_rule_fields() {
        let m = parse_class("kv:udp,dst=10.1.0.0/16,dst-port=8080:2")
            .unwrap()
            .matcher;
        let r = FlowRule::build(&m, 5);
        assert_eq!(
            r.item_types,
            vec![
                sys::RTE_FLOW_ITEM_TYPE_ETH,
                sys::RTE_FLOW_ITEM_TYPE_IPV4,
                sys::RTE_FLOW_ITEM_TYPE_UDP,
                sys::RTE_FLOW_ITEM_TYPE_END
            ]
        );
        assert_eq!(r.attr.ingress(), 1);
        assert_eq!(r.attr.egress(), 0);
        assert_eq!(r.ipv4_spec.hdr.next_proto_id, 17);
        assert_eq!(r.ipv4_mask.hdr.next_proto_id, 0xff);
        // Network byte order in memory: 10.1.0.0 / 255.255.0.0.
        assert_eq!({ r.ipv4_spec.hdr.dst_addr }.to_ne_bytes(), [10, 1, 0, 0]);
        assert_eq!({ r.ipv4_mask.hdr.dst_addr }.to_ne_bytes(), [255, 255, 0, 0]);
        assert_eq!({ r.ipv4_mask.hdr.src_addr }, 0, "src not matched");
        assert_eq!(
            { r.udp_spec.hdr.dst_port }.to_ne_bytes(),
            8080u16.to_be_bytes()
        );
        assert_eq!({ r.udp_mask.hdr.dst_port }, 0xffff);
        assert_eq!({ r.udp_mask.hdr.src_port }, 0);
        assert_eq!(r.queue.index, 5);
        assert_eq!(r.actions.len(), 2);
        assert_eq!(r.actions[0].type_, sys::RTE_FLOW_ACTION_TYPE_QUEUE);
        assert_eq!(
            r.actions[0].conf,
            &r.queue as *const _ as *const std::ffi::c_void
        );
        assert_eq!(r.actions[1].type_, sys::RTE_FLOW_ACTION_TYPE_END);
        assert_eq!(
            r.pattern[2].spec,
            &r.udp_spec as *const _ as *const std::ffi::c_void
        );
        assert_eq!(
            r.pattern[2].mask,
            &r.udp_mask as *const _ as *const std::ffi::c_void
        );
        assert!(r.pattern[0].spec.is_null(), "eth matches any");
    }

    #[test]
    fn tcp_and_prefix_only_rules() {
        let m = parse_class("web:tcp,src-port=443:2").unwrap().matcher;
        let r = FlowRule::build(&m, 1);
        assert_eq!(r.item_types[2], sys::RTE_FLOW_ITEM_TYPE_TCP);
        assert_eq!(
            { r.tcp_spec.hdr.src_port }.to_ne_bytes(),
            443u16.to_be_bytes()
        );
        assert_eq!(
            r.pattern[2].spec,
            &r.tcp_spec as *const _ as *const std::ffi::c_void
        );
        let n = parse_class("net:src=192.168.1.7/32:3").unwrap().matcher;
        let r = FlowRule::build(&n, 2);
        assert_eq!(
            r.item_types,
            vec![
                sys::RTE_FLOW_ITEM_TYPE_ETH,
                sys::RTE_FLOW_ITEM_TYPE_IPV4,
                sys::RTE_FLOW_ITEM_TYPE_END
            ]
        );
        assert_eq!({ r.ipv4_mask.hdr.src_addr }, u32::MAX);
        assert_eq!({ r.ipv4_mask.hdr.next_proto_id }, 0);
    }
}
