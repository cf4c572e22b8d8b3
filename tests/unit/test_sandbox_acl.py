"""The ACL cluster's plan: broker keys that switch authentication on, a user that never prints."""

from __future__ import annotations

import json
from pathlib import Path

from console.sandbox.acl import ACL_BROKER, AclUser, auth_properties, new_user
from console.sandbox.cluster import ClusterSetup, broker_properties
from console.sandbox.ports import ClusterPorts


def test_authentication_is_on_for_the_user_and_the_brokers_own_client() -> None:
    user = AclUser("ops", 'p"w')
    props = auth_properties(user)
    assert props["authenticationEnabled"] == "true"
    assert json.loads(props["initAuthenticationUser"]) == {"username": "ops", "password": 'p"w'}
    # Without it the broker cannot sign its own requests (fact sheet §6.2).
    inner = json.loads(props["innerClientAuthenticationCredentials"])
    assert inner == {"accessKey": "ops", "secretKey": 'p"w'}


def test_extra_keys_reach_the_broker_conf(tmp_path: Path) -> None:
    user = new_user()
    config = ClusterSetup(
        tmp_path, ClusterPorts(9876, {ACL_BROKER: 20911}), broker_extra=auth_properties(user)
    )
    props = broker_properties(config, ACL_BROKER)
    assert props["listenPort"] == "20911"
    assert props["authenticationEnabled"] == "true"


def test_a_user_never_prints_its_password() -> None:
    a, b = new_user(), new_user()
    assert a.password != b.password
    assert a.password not in repr(a)
    assert a.credentials.secret_key == a.password
    assert a.password not in repr(a.credentials)
