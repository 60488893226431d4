#!/usr/bin/env python3
"""Writes N signed App Store notifications for the receiver benchmark: a test chain shaped like
Apple's (root, intermediate with the WWDR extension, leaf with the receipt-signing extension), the
root as PEM, and one POST body ({"signedPayload": JWS}) per line, each with its own UUID.

    bench/appstore-sign.py COUNT OUT_DIR        # writes OUT_DIR/root.pem and OUT_DIR/bodies.jsonl
"""
import base64, datetime, json, sys, time, uuid
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

def certificate(subject, issuer, key, issuer_key, ca, oid):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=30)).not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=not ca, key_cert_sign=ca, crl_sign=False, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True))
    if oid:
        builder = builder.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(oid), b"\x05\x00"), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

def main():
    count, out = int(sys.argv[1]), sys.argv[2]
    root_key, intermediate_key, leaf_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    root = certificate("Bench Root", "Bench Root", root_key, root_key, True, None)
    intermediate = certificate("Bench WWDR", "Bench Root", intermediate_key, root_key, True, "1.2.840.113635.100.6.2.1")
    leaf = certificate("Bench signing", "Bench WWDR", leaf_key, intermediate_key, False, "1.2.840.113635.100.6.11.1")
    with open(f"{out}/root.pem", "wb") as f:
        f.write(root.public_bytes(serialization.Encoding.PEM))
    x5c = [base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode() for c in (leaf, intermediate, root)]
    header = b64url(json.dumps({"alg": "ES256", "x5c": x5c}).encode())
    now = int(time.time() * 1000)
    with open(f"{out}/bodies.jsonl", "w") as f:
        for i in range(count):
            payload = {"notificationType": "DID_RENEW", "notificationUUID": str(uuid.uuid4()), "version": "2.0",
                       "signedDate": now, "data": {"bundleId": "com.example.shop", "appAppleId": 1234567890,
                       "environment": "Production", "status": 1}}
            signing_input = header + "." + b64url(json.dumps(payload).encode())
            r, s = decode_dss_signature(leaf_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
            signature = b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
            f.write(json.dumps({"signedPayload": signing_input + "." + signature}) + "\n")

main()
