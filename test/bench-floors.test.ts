/**
 * The benchmark's platform floors run the hot paths' own D1 statements in a Worker with no logic (bench/floors.mjs):
 * the statement texts and values in bench/floor-statements.mjs must be the ones the service sends for a heartbeat
 * and a validation with a license's bearer token. (The floor Worker checks at start that they find the rows it seeds.)
 */
import { describe, expect, it } from "vitest";
import { HEARTBEAT_READ, VALIDATE_READ } from "../bench/floor-statements.mjs";
import { loggedOutColumn } from "../src/auth/bearer";
import { seatToBeat } from "../src/licensing/floating";
import { licenseToValidate } from "../src/licensing/validation";
import { TokenKind } from "../src/records/vocabulary";

// A license's sign-in token carries no user id: its check is the logout shape (src/auth/bearer.ts).
const check = loggedOutColumn({ jti: "floor-jti", issuedAt: 0 });

describe("the benchmark's floor statements", () => {
  it("are the service's heartbeat and validation reads, bound as the floor binds them", () => {
    expect(HEARTBEAT_READ).toEqual(
      seatToBeat.variant(check).text({ digest: "floor-seat-digest", kind: TokenKind.Floating, ...check.values }),
    );
    expect(VALIDATE_READ).toEqual(
      licenseToValidate.variant(check).text({
        key: "FLOORUSERKEY",
        legacy: "",
        named: 1,
        digest: null,
        machineId: "floor-machine",
        clientId: "",
        at: "2026-01-01T00:00:00.000Z",
        ...check.values,
      }),
    );
  });
});
