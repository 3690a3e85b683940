/**
 * The Authenticode signature shared by PE files and MSI packages (CONTRACT section 15): a PKCS#7 SignedData whose
 * content is an SpcIndirectDataContent (the digest of the signed file) and whose signer certificate names the
 * publisher that electron-updater and Windows compare. It is parsed with the pinned ASN.1 library (no DER by hand),
 * the signer is found by its issuer and serial number (or key identifier), the messageDigest attribute is checked
 * against the content and the signer's signature over the signed attributes is verified with crypto.subtle, so a
 * publisher name is only reported for a signature that its certificate really made. Chain trust (a CA, a
 * timestamp) is not judged: the release rule compares names with the product's own, and Windows judges the chain.
 * Also here: the hashers of the image digest, incremental since crypto.subtle.digest takes no stream and a file is
 * never held whole: workerd's native DigestStream, else (Node, the publish CLI) @noble/hashes.
 */
import { ContentInfo, id_signedData, SignedData, type SignerInfo, Attribute } from "@peculiar/asn1-cms";
import {
  AsnArray,
  AsnConvert,
  AsnIntegerArrayBufferConverter,
  AsnProp,
  AsnPropTypes,
  AsnType,
  AsnTypeTypes,
  OctetString,
} from "@peculiar/asn1-schema";
import { AlgorithmIdentifier, type Certificate, id_ce_subjectKeyIdentifier, type Name } from "@peculiar/asn1-x509";
import { sha1 } from "@noble/hashes/legacy.js";
import { sha256, sha384, sha512 } from "@noble/hashes/sha2.js";
import { SignatureMismatch } from "./mismatch.ts";
import { MalformedFile, plain } from "./source.ts";

/** The signature does not match the signed bytes or its certificate: the service answers 409 signatureInvalid. */
export { SignatureMismatch };

/** The digest algorithms an image digest is checked with. */
export type DigestName = "SHA-1" | "SHA-256" | "SHA-384" | "SHA-512";

/** What an Authenticode signature says: who signed, and the digest of the file it claims to sign. */
export interface Authenticode {
  /** The signer certificate's subject common name (its full subject when it has none). */
  signer: string;
  /** The full subject as Windows prints it: "CN=…, O=…, C=…". */
  subject: string;
  /** The algorithm and value of the file digest in SpcIndirectDataContent. */
  digestAlgorithm: DigestName;
  digest: Uint8Array;
}

const SPC_INDIRECT_DATA = "1.3.6.1.4.1.311.2.1.4";
const MESSAGE_DIGEST = "1.2.840.113549.1.9.4";
const CONTENT_TYPE = "1.2.840.113549.1.9.3";
/** The DER of the SpcIndirectDataContent OID, the value its contentType attribute must hold. */
const SPC_INDIRECT_DATA_DER = "060a2b060104018237020104";
const DIGESTS: Record<string, DigestName> = {
  "1.3.14.3.2.26": "SHA-1",
  "2.16.840.1.101.3.4.2.1": "SHA-256",
  "2.16.840.1.101.3.4.2.2": "SHA-384",
  "2.16.840.1.101.3.4.2.3": "SHA-512",
};
const RSA_SIGNATURES: Record<string, DigestName | null> = {
  "1.2.840.113549.1.1.1": null, // rsaEncryption: the hash is the signerInfo's digestAlgorithm
  "1.2.840.113549.1.1.5": "SHA-1",
  "1.2.840.113549.1.1.11": "SHA-256",
  "1.2.840.113549.1.1.12": "SHA-384",
  "1.2.840.113549.1.1.13": "SHA-512",
};
const ECDSA_SIGNATURES: Record<string, DigestName | null> = {
  "1.2.840.10045.2.1": null, // id-ecPublicKey
  "1.2.840.10045.4.1": "SHA-1",
  "1.2.840.10045.4.3.2": "SHA-256",
  "1.2.840.10045.4.3.3": "SHA-384",
  "1.2.840.10045.4.3.4": "SHA-512",
};
/** The named curves, by the hex DER of the OID in the key's algorithm parameters, and their field size. */
const CURVES: Record<string, { namedCurve: string; size: number }> = {
  "06082a8648ce3d030107": { namedCurve: "P-256", size: 32 },
  "06052b81040022": { namedCurve: "P-384", size: 48 },
};
/** How Windows names subject attributes (X500DistinguishedName); others print as OID.n.n.n. */
const ATTRIBUTE_NAMES: Record<string, string> = {
  "2.5.4.3": "CN",
  "2.5.4.4": "SN",
  "2.5.4.5": "SERIALNUMBER",
  "2.5.4.6": "C",
  "2.5.4.7": "L",
  "2.5.4.8": "S",
  "2.5.4.9": "STREET",
  "2.5.4.10": "O",
  "2.5.4.11": "OU",
  "2.5.4.12": "T",
  "2.5.4.42": "G",
  "1.2.840.113549.1.9.1": "E",
  "0.9.2342.19200300.100.1.25": "DC",
};

// The ASN.1 types the library lacks, declared the way its own are (the decorators called as functions, since the
// publish CLI runs this code with Node's type stripping, which has no decorators).

/** DigestInfo ::= SEQUENCE { digestAlgorithm AlgorithmIdentifier, digest OCTET STRING } */
class DigestInfo {
  digestAlgorithm = new AlgorithmIdentifier();
  digest = new OctetString();
}
AsnProp({ type: AlgorithmIdentifier })(DigestInfo.prototype, "digestAlgorithm");
AsnProp({ type: OctetString })(DigestInfo.prototype, "digest");

/** SpcAttributeTypeAndOptionalValue ::= SEQUENCE { type OBJECT IDENTIFIER, value ANY OPTIONAL } */
class SpcAttributeTypeAndOptionalValue {
  type = "";
  value?: ArrayBuffer;
}
AsnProp({ type: AsnPropTypes.ObjectIdentifier })(SpcAttributeTypeAndOptionalValue.prototype, "type");
AsnProp({ type: AsnPropTypes.Any, optional: true })(SpcAttributeTypeAndOptionalValue.prototype, "value");

/** SpcIndirectDataContent ::= SEQUENCE { data SpcAttributeTypeAndOptionalValue, messageDigest DigestInfo } */
class SpcIndirectDataContent {
  data = new SpcAttributeTypeAndOptionalValue();
  dataRaw?: ArrayBuffer;
  messageDigest = new DigestInfo();
  messageDigestRaw?: ArrayBuffer;
}
AsnProp({ type: SpcAttributeTypeAndOptionalValue, raw: true })(SpcIndirectDataContent.prototype, "data");
AsnProp({ type: DigestInfo, raw: true })(SpcIndirectDataContent.prototype, "messageDigest");

/** SignedAttributes as the SET OF Attribute that the signature covers (RFC 5652 5.4). */
class SignedAttributes extends AsnArray<Attribute> {}
AsnType({ type: AsnTypeTypes.Set, itemType: Attribute })(SignedAttributes);

/** ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } */
class EcdsaSignature {
  r = new ArrayBuffer(0);
  s = new ArrayBuffer(0);
}
AsnProp({ type: AsnPropTypes.Integer, converter: AsnIntegerArrayBufferConverter })(EcdsaSignature.prototype, "r");
AsnProp({ type: AsnPropTypes.Integer, converter: AsnIntegerArrayBufferConverter })(EcdsaSignature.prototype, "s");

/** The bytes of an ArrayBuffer, a view, or the library's OctetString (view-like, though not an ArrayBuffer view). */
function bytes(data: ArrayBuffer | ArrayBufferView | OctetString): Uint8Array {
  return data instanceof ArrayBuffer
    ? new Uint8Array(data)
    : new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
}

function hex(data: Uint8Array): string {
  return Array.from(data, (b) => b.toString(16).padStart(2, "0")).join("");
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && a.every((byte, i) => byte === b[i]);
}

/** Parses DER with the library, reporting any failure as a malformed signature. */
function parse<T>(der: ArrayBuffer | Uint8Array, type: new () => T, what: string): T {
  try {
    return AsnConvert.parse(der, type);
  } catch (e) {
    throw new MalformedFile(
      `the Authenticode signature is not PKCS#7 SignedData: ${what} does not parse (${e instanceof Error ? e.message : e})`,
    );
  }
}

/** A subject as Windows prints it: the relative names last to first, "CN=…, O=…", values with , + = " quoted. */
export function windowsSubject(name: Name): string {
  return name
    .map((rdn) =>
      rdn
        .map((attribute) => {
          const value = attribute.value.toString();
          const quoted = /[,+="\n<>#;]|^\s|\s$/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
          return `${ATTRIBUTE_NAMES[attribute.type] ?? `OID.${attribute.type}`}=${quoted}`;
        })
        .join(" + "),
    )
    .reverse()
    .join(", ");
}

function commonName(name: Name): string | undefined {
  for (const rdn of name)
    for (const attribute of rdn) if (attribute.type === "2.5.4.3") return attribute.value.toString();
  return undefined;
}

/** The certificate the signerInfo names, by issuer and serial number or by subject key identifier. */
function signerCertificate(signed: SignedData, info: SignerInfo): Certificate {
  const certificates = (signed.certificates ?? []).flatMap((choice) =>
    choice.certificate ? [choice.certificate] : [],
  );
  const byIssuer = info.sid.issuerAndSerialNumber;
  const keyId = info.sid.subjectKeyIdentifier;
  const found = certificates.find((certificate) => {
    const tbs = certificate.tbsCertificate;
    if (byIssuer)
      return (
        equal(bytes(tbs.serialNumber), bytes(byIssuer.serialNumber)) &&
        equal(bytes(AsnConvert.serialize(tbs.issuer)), bytes(AsnConvert.serialize(byIssuer.issuer)))
      );
    const extension = tbs.extensions?.find((e) => e.extnID === id_ce_subjectKeyIdentifier);
    if (!keyId || !extension) return false;
    return equal(bytes(parse(extension.extnValue.buffer, OctetString, "a subject key identifier")), bytes(keyId));
  });
  if (!found)
    throw new MalformedFile("the Authenticode signature is not PKCS#7 SignedData: it holds no signer certificate");
  return found;
}

function digestName(oid: string, what: string): DigestName {
  const name = DIGESTS[oid];
  if (!name) throw new MalformedFile(`the Authenticode signature uses an unsupported ${what} algorithm (${oid})`);
  return name;
}

/** Verifies the signerInfo's signature over the DER of its signed attributes with the certificate's public key. */
async function verifySignerInfo(info: SignerInfo, certificate: Certificate, digest: DigestName): Promise<void> {
  const signedAttributes = bytes(AsnConvert.serialize(new SignedAttributes(info.signedAttrs ?? [])));
  const signature = bytes(info.signature);
  const spki = AsnConvert.serialize(certificate.tbsCertificate.subjectPublicKeyInfo);
  const algorithm = info.signatureAlgorithm.algorithm;
  let verified: boolean;
  try {
    if (algorithm in RSA_SIGNATURES) {
      const scheme = { name: "RSASSA-PKCS1-v1_5", hash: RSA_SIGNATURES[algorithm] ?? digest };
      const key = await crypto.subtle.importKey("spki", spki, scheme, false, ["verify"]);
      verified = await crypto.subtle.verify(scheme, key, plain(signature), plain(signedAttributes));
    } else if (algorithm in ECDSA_SIGNATURES) {
      const parameters = certificate.tbsCertificate.subjectPublicKeyInfo.algorithm.parameters;
      const curve = parameters ? CURVES[hex(bytes(parameters))] : undefined;
      if (!curve) throw new MalformedFile("the Authenticode signer's ECDSA key is on an unsupported curve");
      const key = await crypto.subtle.importKey("spki", spki, { name: "ECDSA", namedCurve: curve.namedCurve }, false, [
        "verify",
      ]);
      const { r, s } = parse(signature, EcdsaSignature, "the ECDSA signature");
      const raw = new Uint8Array(curve.size * 2);
      for (const [at, part] of [
        [0, bytes(r)],
        [curve.size, bytes(s)],
      ] as const) {
        const trimmed = part.subarray(Math.max(0, part.byteLength - curve.size));
        raw.set(trimmed, at + curve.size - trimmed.byteLength);
      }
      const hash = ECDSA_SIGNATURES[algorithm] ?? digest;
      verified = await crypto.subtle.verify({ name: "ECDSA", hash }, key, plain(raw), plain(signedAttributes));
    } else {
      throw new MalformedFile(`the Authenticode signature uses an unsupported signature algorithm (${algorithm})`);
    }
  } catch (e) {
    if (e instanceof MalformedFile) throw e;
    throw new SignatureMismatch(
      `the Authenticode signer's key cannot check the signature (${e instanceof Error ? e.message : e})`,
    );
  }
  if (!verified) throw new SignatureMismatch("the Authenticode signature was not made by its signer certificate");
}

/** The one value of a signed attribute, or undefined when the attribute is absent. */
function attribute(info: SignerInfo, type: string): ArrayBuffer | undefined {
  const found = info.signedAttrs?.find((a) => a.attrType === type);
  if (found && found.attrValues.length !== 1)
    throw new MalformedFile(`the Authenticode signature's attribute ${type} has ${found.attrValues.length} values`);
  return found?.attrValues[0];
}

/**
 * Reads a DER Authenticode signature (the PKCS#7 of a PE certificate table or an MSI's DigitalSignature stream):
 * its signer and the file digest it signs. Throws MalformedFile when it is not one, SignatureMismatch when its
 * messageDigest or its signature does not hold.
 */
export async function readAuthenticode(der: Uint8Array): Promise<Authenticode> {
  const contentInfo = parse(der, ContentInfo, "its ContentInfo");
  if (contentInfo.contentType !== id_signedData)
    throw new MalformedFile(`the Authenticode signature is not PKCS#7 SignedData: content ${contentInfo.contentType}`);
  const signed = parse(contentInfo.content, SignedData, "its SignedData");
  const encapsulated = signed.encapContentInfo;
  const content = encapsulated.eContent?.any ?? encapsulated.eContent?.single?.buffer;
  if (encapsulated.eContentType !== SPC_INDIRECT_DATA || !content)
    throw new MalformedFile(
      `the Authenticode signature is not PKCS#7 SignedData over SpcIndirectDataContent (${encapsulated.eContentType})`,
    );
  const indirect = parse(content, SpcIndirectDataContent, "its SpcIndirectDataContent");
  const info = signed.signerInfos[0];
  if (!info || signed.signerInfos.length !== 1)
    throw new MalformedFile(`the Authenticode signature has ${signed.signerInfos.length} signers, not one`);
  const certificate = signerCertificate(signed, info);
  const subjectName = certificate.tbsCertificate.subject;
  const subject = windowsSubject(subjectName);

  // The messageDigest attribute covers the content's value, without its SEQUENCE tag and length: the DER of its
  // two elements, as the parser read them.
  const value = new Uint8Array([...bytes(indirect.dataRaw!), ...bytes(indirect.messageDigestRaw!)]);
  const whole = bytes(content);
  if (!equal(whole.subarray(whole.byteLength - value.byteLength), value))
    throw new MalformedFile("the Authenticode signature's SpcIndirectDataContent has unexpected elements");
  const signerDigest = digestName(info.digestAlgorithm.algorithm, "signer digest");
  const messageDigest = attribute(info, MESSAGE_DIGEST);
  const contentType = attribute(info, CONTENT_TYPE);
  if (!messageDigest || !contentType)
    throw new MalformedFile("the Authenticode signature lacks its messageDigest or contentType attribute");
  if (hex(bytes(contentType)) !== SPC_INDIRECT_DATA_DER)
    throw new SignatureMismatch("the Authenticode signature's signed contentType is not SpcIndirectDataContent");
  const expected = bytes(parse(messageDigest, OctetString, "its messageDigest attribute"));
  const actual = new Uint8Array(await crypto.subtle.digest(signerDigest, value));
  if (!equal(expected, actual))
    throw new SignatureMismatch("the Authenticode signature's messageDigest does not match its signed content");
  await verifySignerInfo(info, certificate, signerDigest);
  return {
    signer: commonName(subjectName) ?? subject,
    subject,
    digestAlgorithm: digestName(indirect.messageDigest.digestAlgorithm.algorithm, "file digest"),
    digest: bytes(indirect.messageDigest.digest),
  };
}

/** An incremental digest: the image digest is computed over a stream, never over the whole file at once. */
export interface Hasher {
  readonly algorithm: DigestName;
  update(chunk: Uint8Array): Promise<void>;
  digest(): Promise<Uint8Array>;
}

type DigestStreamClass = new (algorithm: string) => WritableStream<ArrayBufferView> & { digest: Promise<ArrayBuffer> };

const NOBLE = { "SHA-1": sha1, "SHA-256": sha256, "SHA-384": sha384, "SHA-512": sha512 };

/** A hasher of `algorithm`: workerd's native DigestStream when there is one, else @noble/hashes (Node). */
export function hasher(algorithm: DigestName): Hasher {
  if ("DigestStream" in crypto) {
    const stream = new (crypto as unknown as { DigestStream: DigestStreamClass }).DigestStream(algorithm);
    const writer = stream.getWriter();
    return {
      algorithm,
      update: (chunk) => writer.write(chunk),
      digest: async () => {
        await writer.close();
        return new Uint8Array(await stream.digest);
      },
    };
  }
  const state = NOBLE[algorithm].create();
  return {
    algorithm,
    update: async (chunk) => void state.update(chunk),
    digest: async () => state.digest(),
  };
}
