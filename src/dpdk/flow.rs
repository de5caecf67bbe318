//! `rte_flow` rules that steer an application class to its own RX queue:
//! pattern `eth / ipv4 [src, dst masked] / udp|tcp [ports]`, action
//! `QUEUE index`. Built in Rust (so the structs can be checked field by
//! field without a NIC), validated with `rte_flow_validate`, created, and
//! destroyed at shutdown. PMDs without flow support refuse at validation;
//! the caller then uses software classification with the same semantics.

use super::error::{rte_errno, DpdkError};
use super::sys;
use crate::wire::flow::FlowMatch;
use crate::wire::ipv4::{prefix_mask, protocol};
use std::ffi::{c_void, CStr};

/// The L4 item of a rule, when the pattern names UDP or TCP.
#[derive(Clone, Copy)]
enum L4 {
    Udp {
        spec: sys::rte_flow_item_udp,
        mask: sys::rte_flow_item_udp,
    },
    Tcp {
        spec: sys::rte_flow_item_tcp,
        mask: sys::rte_flow_item_tcp,
    },
}

/// One rule's specs and masks: plain data, freely movable. The rte_flow
/// item and action arrays that point into it are built on the stack for
/// the duration of each call ([`FlowRule::with_arrays`]).
#[derive(Clone, Copy)]
pub struct FlowRule {
    attr: sys::rte_flow_attr,
    ipv4_spec: sys::rte_flow_item_ipv4,
    ipv4_mask: sys::rte_flow_item_ipv4,
    l4: Option<L4>,
    queue: sys::rte_flow_action_queue,
}

/// `ETH / IPV4 [/ UDP|TCP] / END`: at most four items.
const MAX_ITEMS: usize = 4;

impl FlowRule {
    /// Builds the rule for `m` steering to RX queue `queue` (ingress).
    /// Only the fields the pattern names are masked in; addresses and ports
    /// are in network byte order as rte_flow wants.
    pub fn build(m: &FlowMatch, queue: u16) -> FlowRule {
        let mut attr = sys::rte_flow_attr::default();
        attr.set_ingress(1);
        let mut ipv4_spec = sys::rte_flow_item_ipv4::default();
        let mut ipv4_mask = sys::rte_flow_item_ipv4::default();
        if let Some(p) = m.proto {
            ipv4_spec.hdr.next_proto_id = p;
            ipv4_mask.hdr.next_proto_id = 0xff;
        }
        if let Some((a, len)) = m.src {
            ipv4_spec.hdr.src_addr = u32::from_ne_bytes(a);
            ipv4_mask.hdr.src_addr = prefix_mask(len).to_be();
        }
        if let Some((a, len)) = m.dst {
            ipv4_spec.hdr.dst_addr = u32::from_ne_bytes(a);
            ipv4_mask.hdr.dst_addr = prefix_mask(len).to_be();
        }
        let port = |p: Option<u16>| (p.unwrap_or(0).to_be(), if p.is_some() { 0xffff } else { 0 });
        let (sp, sp_mask) = port(m.src_port);
        let (dp, dp_mask) = port(m.dst_port);
        let l4 = match m.proto {
            Some(protocol::UDP) => {
                let mut spec = sys::rte_flow_item_udp::default();
                let mut mask = sys::rte_flow_item_udp::default();
                (spec.hdr.src_port, mask.hdr.src_port) = (sp, sp_mask);
                (spec.hdr.dst_port, mask.hdr.dst_port) = (dp, dp_mask);
                Some(L4::Udp { spec, mask })
            }
            Some(protocol::TCP) => {
                let mut spec = sys::rte_flow_item_tcp::default();
                let mut mask = sys::rte_flow_item_tcp::default();
                (spec.hdr.src_port, mask.hdr.src_port) = (sp, sp_mask);
                (spec.hdr.dst_port, mask.hdr.dst_port) = (dp, dp_mask);
                Some(L4::Tcp { spec, mask })
            }
            _ => None,
        };
        FlowRule {
            attr,
            ipv4_spec,
            ipv4_mask,
            l4,
            queue: sys::rte_flow_action_queue { index: queue },
        }
    }

    /// Calls `f` with the attribute, the END-terminated pattern and action
    /// arrays, all pointing into `self` and the stack, valid during `f`.
    fn with_arrays<R>(
        &self,
        f: impl FnOnce(&sys::rte_flow_attr, &[sys::rte_flow_item], &[sys::rte_flow_action]) -> R,
    ) -> R {
        let item = |type_, spec: *const c_void, mask: *const c_void| sys::rte_flow_item {
            type_,
            spec,
            mask,
            ..Default::default()
        };
        let none = std::ptr::null();
        let mut items = [item(sys::RTE_FLOW_ITEM_TYPE_END, none, none); MAX_ITEMS];
        items[0] = item(sys::RTE_FLOW_ITEM_TYPE_ETH, none, none);
        items[1] = item(
            sys::RTE_FLOW_ITEM_TYPE_IPV4,
            &self.ipv4_spec as *const _ as *const c_void,
            &self.ipv4_mask as *const _ as *const c_void,
        );
        let mut n = 2;
        match &self.l4 {
            Some(L4::Udp { spec, mask }) => {
                items[n] = item(
                    sys::RTE_FLOW_ITEM_TYPE_UDP,
                    spec as *const _ as *const c_void,
                    mask as *const _ as *const c_void,
                );
                n += 1;
            }
            Some(L4::Tcp { spec, mask }) => {
                items[n] = item(
                    sys::RTE_FLOW_ITEM_TYPE_TCP,
                    spec as *const _ as *const c_void,
                    mask as *const _ as *const c_void,
                );
                n += 1;
            }
            None => {}
        }
        let actions = [
            sys::rte_flow_action {
                type_: sys::RTE_FLOW_ACTION_TYPE_QUEUE,
                conf: &self.queue as *const _ as *const c_void,
            },
            sys::rte_flow_action {
                type_: sys::RTE_FLOW_ACTION_TYPE_END,
                conf: none,
            },
        ];
        f(&self.attr, &items[..=n], &actions)
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
        let ret = self.with_arrays(|attr, pattern, actions| {
            // SAFETY: attr, pattern and actions are valid for the call; both
            // arrays end with END entries; err is a valid out-pointer.
            unsafe {
                sys::rte_flow_validate(port, attr, pattern.as_ptr(), actions.as_ptr(), &mut err)
            }
        });
        if ret != 0 {
            return Err(Self::error_text(
                &format!("rte_flow_validate(port {port})"),
                ret,
                &err,
            ));
        }
        Ok(())
    }

    /// `rte_flow_create` on `port`. The rule moves into the returned flow,
    /// boxed, so what DPDK was given stays where it was until the flow is
    /// destroyed.
    pub fn create(self, port: u16) -> Result<InstalledFlow, DpdkError> {
        let rule = Box::new(self);
        let mut err = sys::rte_flow_error::default();
        let flow = rule.with_arrays(|attr, pattern, actions| {
            // SAFETY: as in validate().
            unsafe {
                sys::rte_flow_create(port, attr, pattern.as_ptr(), actions.as_ptr(), &mut err)
            }
        });
        if flow.is_null() {
            return Err(Self::error_text(
                &format!("rte_flow_create(port {port})"),
                -rte_errno(),
                &err,
            ));
        }
        Ok(InstalledFlow {
            port,
            flow,
            _rule: rule,
        })
    }
}

/// A created flow rule; destroy it before the port closes.
pub struct InstalledFlow {
    pub port: u16,
    flow: *mut sys::rte_flow,
    /// The specs the flow was created from (a PMD may keep pointers).
    _rule: Box<FlowRule>,
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

    fn types(r: &FlowRule) -> Vec<sys::rte_flow_item_type> {
        r.with_arrays(|_, p, _| p.iter().map(|i| i.type_).collect())
    }

    #[test]
    fn udp_dst_port_rule_fields() {
        let m = FlowMatch {
            proto: Some(17),
            dst: Some(([10, 1, 0, 0], 16)),
            dst_port: Some(8080),
            ..Default::default()
        };
        let r = FlowRule::build(&m, 5);
        assert_eq!(
            types(&r),
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
        let Some(L4::Udp { spec, mask }) = r.l4 else {
            panic!("a UDP item")
        };
        assert_eq!({ spec.hdr.dst_port }.to_ne_bytes(), 8080u16.to_be_bytes());
        assert_eq!({ mask.hdr.dst_port }, 0xffff);
        assert_eq!({ mask.hdr.src_port }, 0);
        assert_eq!(r.queue.index, 5);
        r.with_arrays(|_, pattern, actions| {
            assert_eq!(actions.len(), 2);
            assert_eq!(actions[0].type_, sys::RTE_FLOW_ACTION_TYPE_QUEUE);
            // SAFETY: conf points at the rule's queue action while in here.
            let index = unsafe { (*(actions[0].conf as *const sys::rte_flow_action_queue)).index };
            assert_eq!(index, 5);
            assert_eq!(actions[1].type_, sys::RTE_FLOW_ACTION_TYPE_END);
            // SAFETY: the UDP item's spec points at the rule's UDP spec.
            let port = unsafe {
                (*(pattern[2].spec as *const sys::rte_flow_item_udp))
                    .hdr
                    .dst_port
            };
            assert_eq!(port.to_ne_bytes(), 8080u16.to_be_bytes());
            assert!(pattern[0].spec.is_null(), "eth matches any");
        });
    }

    #[test]
    fn a_moved_rule_points_at_its_new_place() {
        let m = FlowMatch {
            proto: Some(6),
            src_port: Some(443),
            ..Default::default()
        };
        let rules: Vec<FlowRule> = (0..3).map(|q| FlowRule::build(&m, q)).collect();
        let moved = rules[2];
        drop(rules);
        moved.with_arrays(|_, pattern, actions| {
            assert_eq!(pattern[2].type_, sys::RTE_FLOW_ITEM_TYPE_TCP);
            assert_eq!(
                pattern[1].spec,
                &moved.ipv4_spec as *const _ as *const c_void
            );
            assert_eq!(actions[0].conf, &moved.queue as *const _ as *const c_void);
        });
    }

    #[test]
    fn tcp_and_prefix_only_rules() {
        let m = FlowMatch {
            proto: Some(6),
            src_port: Some(443),
            ..Default::default()
        };
        let r = FlowRule::build(&m, 1);
        let Some(L4::Tcp { spec, .. }) = r.l4 else {
            panic!("a TCP item")
        };
        assert_eq!({ spec.hdr.src_port }.to_ne_bytes(), 443u16.to_be_bytes());
        let n = FlowMatch {
            src: Some(([192, 168, 1, 7], 32)),
            ..Default::default()
        };
        let r = FlowRule::build(&n, 2);
        assert_eq!(
            types(&r),
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
