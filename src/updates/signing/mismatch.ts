/**
 * The verdict on a file whose signature is not over its bytes (CONTRACT section 15): the file is what its name says
 * and carries a signature, but the bytes were changed after signing (a Mach-O page, an Authenticode digest). The
 * service answers 409 `signatureInvalid`, unlike MalformedFile (400), which is a file that is not what it says.
 */

/** A signature present and well formed that does not match the bytes it signs. */
export class SignatureMismatch extends Error {
  override readonly name = "SignatureMismatch";
}
