"""`bulkhead auth set|status|delete PROVIDER` — keys live in the system keyring, never in files."""

from __future__ import annotations

import getpass
import sys

from app.secrets import KEYED_PROVIDERS, SecretStoreError, delete_api_key, get_api_key, mask, set_api_key


def run(args) -> int:
    if args.action == "status":
        for provider in [args.provider] if args.provider else KEYED_PROVIDERS:
            lookup = get_api_key(provider)
            where = lookup.source if lookup.value else "not found"
            print(f"{provider:10} {mask(lookup.value):20} {where}")
            if lookup.note:
                print(f"{'':10} note: {lookup.note}")
        print("bedrock    uses the AWS credential chain (environment, profile, SSO, instance role)")
        return 0
    if args.action == "set":
        if sys.stdin.isatty():
            value = getpass.getpass(f"{args.provider} API key (not echoed): ").strip()
        else:
            value = sys.stdin.readline().strip()
        if not value:
            print("bulkhead: no key given; nothing stored", file=sys.stderr)
            return 1
        try:
            set_api_key(args.provider, value)
        except SecretStoreError as exc:
            print(f"bulkhead: {exc}", file=sys.stderr)
            return 1
        print(f"stored the {args.provider} key in the system keyring ({mask(value)})")
        return 0
    try:
        removed = delete_api_key(args.provider)
    except SecretStoreError as exc:
        print(f"bulkhead: {exc}", file=sys.stderr)
        return 1
    print(
        f"removed the {args.provider} key from the keyring"
        if removed
        else f"no {args.provider} key was stored"
    )
    return 0
