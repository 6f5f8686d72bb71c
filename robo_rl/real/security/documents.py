"""The DDS-Security documents of a robo_rl keystore: the domain governance and one enclave's permissions.

Both follow OMG DDS-Security 1.1 (formal/18-04-01), section 9.4.1.2 (the Domain Governance Document, XSD
omg_shared_ca_governance.xsd) and section 9.4.1.3 (the DomainParticipant Permissions Document,
omg_shared_ca_permissions.xsd), as ROS 2 uses them (ros2/sros2: the default governance of `ros2 security
create_keystore`, one `grant` per enclave whose subject is `CN=<enclave>`, ROS topics as DDS topics `rt/<name>`,
`ros_discovery_info` for rmw's graph). The governance here asks for what SROS2's default asks for: no
unauthenticated participant joins, discovery and liveliness encrypted, RTPS messages signed, and every topic
access-controlled and encrypted. A grant lists exactly the topics its node publishes and subscribes; everything
else is denied (`<default>DENY</default>`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from xml.sax.saxutils import escape

SCHEMA = "http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_{kind}.xsd"
XSI = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
ROS_GRAPH_TOPIC = "ros_discovery_info"
"""The DDS topic rmw_fastrtps and rmw_cyclonedds publish the ROS graph on (every participant reads and writes it)."""
ROS_TOPIC_PREFIX = "rt"


@dataclass(frozen=True)
class Grant:
    """What one enclave may do: ROS topic names (fully qualified, e.g. `/car1/intervention`) it may publish and
    subscribe to, and the ROS services it may call and serve (their request/reply topics)."""

    enclave: str
    publish: tuple[str, ...] = ()
    subscribe: tuple[str, ...] = ()
    call: tuple[str, ...] = ()
    serve: tuple[str, ...] = ()


def dds_topic(ros_name: str) -> str:
    """The DDS topic of a ROS topic (rmw's mangling: `/car1/odom` → `rt/car1/odom`); wildcards pass through."""
    return f"{ROS_TOPIC_PREFIX}/{ros_name.lstrip('/')}"


def service_topics(ros_name: str) -> tuple[str, str]:
    """A ROS service's request and reply DDS topics (`rq/NAMERequest`, `rr/NAMEReply`)."""
    name = ros_name.lstrip("/")
    return f"rq/{name}Request", f"rr/{name}Reply"


def governance_xml(domain_id: int) -> str:
    """The domain governance for `domain_id`: authenticated participants only, everything protected."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds {XSI} xsi:noNamespaceSchemaLocation="{SCHEMA.format(kind="governance")}">
  <domain_access_rules>
    <domain_rule>
      <domains>
        <id>{domain_id}</id>
      </domains>
      <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
      <enable_join_access_control>true</enable_join_access_control>
      <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
      <liveliness_protection_kind>ENCRYPT</liveliness_protection_kind>
      <rtps_protection_kind>SIGN</rtps_protection_kind>
      <topic_access_rules>
        <topic_rule>
          <topic_expression>*</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>true</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>ENCRYPT</metadata_protection_kind>
          <data_protection_kind>ENCRYPT</data_protection_kind>
        </topic_rule>
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"""


def permissions_xml(grant: Grant, domain_id: int, not_before: dt.datetime, not_after: dt.datetime) -> str:
    """The permissions document of one enclave: one grant for subject `CN=<enclave>`, valid over the enclave
    certificate's validity (UTC), allowing its topics on `domain_id` and denying everything else."""
    publish = [dds_topic(name) for name in grant.publish]
    subscribe = [dds_topic(name) for name in grant.subscribe]
    for service in grant.call:
        request, reply = service_topics(service)
        publish.append(request)
        subscribe.append(reply)
    for service in grant.serve:
        request, reply = service_topics(service)
        subscribe.append(request)
        publish.append(reply)
    publish.append(ROS_GRAPH_TOPIC)
    subscribe.append(ROS_GRAPH_TOPIC)
    enclave = escape(grant.enclave)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<dds {XSI} xsi:noNamespaceSchemaLocation="{SCHEMA.format(kind="permissions")}">
  <permissions>
    <grant name="{enclave}">
      <subject_name>CN={enclave}</subject_name>
      <validity>
        <not_before>{_xsd_time(not_before)}</not_before>
        <not_after>{_xsd_time(not_after)}</not_after>
      </validity>
      <allow_rule>
        <domains>
          <id>{domain_id}</id>
        </domains>
{_topics("publish", publish)}{_topics("subscribe", subscribe)}      </allow_rule>
      <default>DENY</default>
    </grant>
  </permissions>
</dds>
"""


def _topics(kind: str, names: Iterable[str]) -> str:
    unique = sorted(set(names))
    if not unique:
        return ""
    lines = "".join(f"            <topic>{escape(name)}</topic>\n" for name in unique)
    return f"        <{kind}>\n          <topics>\n{lines}          </topics>\n        </{kind}>\n"


def _xsd_time(moment: dt.datetime) -> str:
    """xs:dateTime in UTC without a zone suffix, as SROS2 writes it (the plugins read it as UTC)."""
    return moment.astimezone(dt.UTC).replace(tzinfo=None, microsecond=0).isoformat()
