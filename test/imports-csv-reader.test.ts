import { describe, expect, it } from "vitest";
import { readCsv } from "../src/imports/csv";
import type { ImportRow } from "../src/imports/rows";

// The CSV reader of imports (src/imports/csv.ts): pure, so these tests give it texts and look at what it makes of them.

const HEADER = "legacyKey,product,customerEmail,customerName,edition,expireDate,maxActivations,machines";

/** A good record of the standard header: the key GOOD-KEY-<n>, everything else empty. */
const good = (n: number) => `GOOD-KEY-${n},app,,,,,,`;

/** What a good record of the standard header becomes on its line. */
const goodRow = (n: number, line: number): ImportRow => ({
  row: line,
  legacyKey: `GOOD-KEY-${n}`,
  product: "app",
  licensingMode: "activation",
  maxClients: 0,
  machines: [],
});

/** One record after the standard header: its row, or its problems. */
function readOne(record: string) {
  return readCsv(`${HEADER}\n${record}\n`);
}

describe("readCsv: a good file", () => {
  it("reads quoted fields (commas, quotes, line breaks), a BOM, CRLF and a header in another order and case", () => {
    const text =
      "\uFEFFProduct,LEGACYKEY,customername,CustomerEmail,Edition,expiredate,MaxActivations,machines,Notes\r\n" +
      'app,KEY-0001-AAAA,"Smith, John Jr",john@example.com,Pro,2030-12-31,3,"m-1; m-2 ;;",plain\r\n' +
      'app,"KEY-0002-""Q""",Mary Ann Jones,,,2031-01-02T03:04:05+02:00,,,"a note, with a comma\r\nand a second line\nand a third"\r\n' +
      "\r\n" +
      " app , KEY-0003-CCCC ,Cher,,,,0,,\r\n" +
      "app,KEY-0004-DDDD,,,,,,,\r\n";
    const read = readCsv(text);
    expect(read.errors).toEqual([]);
    expect(read.unsupported).toEqual(['CSV columns not imported: "Notes"']);
    expect(read.rows).toStrictEqual([
      {
        row: 2,
        legacyKey: "KEY-0001-AAAA",
        product: "app",
        customer: { email: "john@example.com", firstName: "Smith, John", lastName: "Jr" },
        edition: "Pro",
        expireDate: "2030-12-31T00:00:00.000Z",
        licensingMode: "activation",
        maxClients: 3,
        machines: [{ fingerprint: "m-1" }, { fingerprint: "m-2" }],
      },
      {
        row: 3,
        legacyKey: 'KEY-0002-"Q"',
        product: "app",
        customer: { firstName: "Mary Ann", lastName: "Jones" },
        expireDate: "2031-01-02T01:04:05.000Z",
        licensingMode: "activation",
        maxClients: 0,
        machines: [],
      },
      // Line 3's note spans lines 3 to 5, line 6 is blank.
      {
        row: 7,
        legacyKey: "KEY-0003-CCCC",
        product: "app",
        customer: { lastName: "Cher" },
        licensingMode: "activation",
        maxClients: 0,
        machines: [],
      },
      { row: 8, legacyKey: "KEY-0004-DDDD", product: "app", licensingMode: "activation", maxClients: 0, machines: [] },
    ]);
  });

  it.each([
    ["LF", "\n"],
    ["CRLF", "\r\n"],
    ["CR", "\r"],
  ])("counts lines ended by %s, with or without a last line break", (_, eol) => {
    for (const end of ["", eol]) {
      const text = [HEADER, good(1), `"MULTI-LINE-KEY",app,,"Jo${eol}Doe",,,,`, "", good(2)].join(eol) + end;
      const read = readCsv(text);
      expect(read.errors).toEqual([]);
      expect(read.rows.map((r) => [r.row, r.legacyKey])).toEqual([
        [2, "GOOD-KEY-1"],
        [3, "MULTI-LINE-KEY"],
        [6, "GOOD-KEY-2"],
      ]);
    }
  });

  it("reads only the required columns", () => {
    expect(readCsv("legacyKey,product\nKEY-0001-AAAA,app")).toStrictEqual({
      rows: [
        {
          row: 2,
          legacyKey: "KEY-0001-AAAA",
          product: "app",
          licensingMode: "activation",
          maxClients: 0,
          machines: [],
        },
      ],
      errors: [],
      unsupported: [],
    });
  });

  it("skips lines of empty cells", () => {
    const read = readCsv([HEADER, good(1), ",,,,,,,", " , ,,,,,,", good(2)].join("\n"));
    expect(read.errors).toEqual([]);
    expect(read.rows).toStrictEqual([goodRow(1, 2), goodRow(2, 5)]);
  });

  it.each([
    ["2030-12-31", "2030-12-31T00:00:00.000Z"],
    ["2024-02-29", "2024-02-29T00:00:00.000Z"],
    ["1970-01-01", "1970-01-01T00:00:00.000Z"],
    ["2030-12-31T23:59:59Z", "2030-12-31T23:59:59.000Z"],
    ["2030-06-01T12:00Z", "2030-06-01T12:00:00.000Z"],
    ["2030-12-31T23:59:59.5+01:00", "2030-12-31T22:59:59.500Z"],
    ["2030-12-31T20:00:00.123456-0500", "2031-01-01T01:00:00.123Z"],
    ["9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"],
  ])("reads the expireDate %s as %s", (value, instant) => {
    expect(readOne(`GOOD-KEY-1,app,,,,${value},,`).rows[0]?.expireDate).toBe(instant);
  });

  it.each([
    ["Cher", { lastName: "Cher" }],
    ["  John   Smith ", { firstName: "John", lastName: "Smith" }],
    ["Mary Ann Jones", { firstName: "Mary Ann", lastName: "Jones" }],
  ])("splits the customerName %j", (name, customer) => {
    expect(readOne(`GOOD-KEY-1,app,,${name},,,,`).rows[0]?.customer).toStrictEqual(customer);
  });

  it.each([
    ["", 0],
    ["0", 0],
    ["007", 7],
    ["2147483647", 2147483647],
  ])("reads the maxActivations %j as %d", (value, maxClients) => {
    expect(readOne(`GOOD-KEY-1,app,,,,,${value},`).rows[0]).toMatchObject({ licensingMode: "activation", maxClients });
  });

  it("reads machines trimmed, without empty or repeated ids", () => {
    const machines = readOne('GOOD-KEY-1,app,,,,,," a ; b;;a ;~!x{}"').rows[0]?.machines;
    expect(machines).toStrictEqual([{ fingerprint: "a" }, { fingerprint: "b" }, { fingerprint: "~!x{}" }]);
  });
});

describe("readCsv: a bad record is reported on its line, the others are read", () => {
  const CONTROL = "\u0001";
  it.each([
    ["an empty legacyKey", ",app,,,,,,", "legacyKey", "required"],
    ["a short legacyKey", "short,app,,,,,,", "legacyKey", "8 to 256 characters"],
    ["a legacyKey of 257 characters", `${"k".repeat(257)},app,,,,,,`, "legacyKey", "8 to 256 characters"],
    ["a legacyKey with a control character", `BAD-KEY${CONTROL}-1,app,,,,,,`, "legacyKey", "printable"],
    ["no product", "BAD-KEY-1,,,,,,,", "product", "required"],
    ["a product of spaces", "BAD-KEY-1,  ,,,,,,", "product", "required"],
    ["an e-mail without @", "BAD-KEY-1,app,john.example.com,,,,,", "customerEmail", "not an e-mail address"],
    ["an e-mail without a domain", "BAD-KEY-1,app,john@localhost,,,,,", "customerEmail", "not an e-mail address"],
    ["an e-mail with a space", '"BAD-KEY-1",app,"jo hn@example.com",,,,,', "customerEmail", "not an e-mail"],
    ["an edition of 65 characters", `BAD-KEY-1,app,,,${"e".repeat(65)},,,`, "edition", "at most 64 characters"],
    ["a date in another format", "BAD-KEY-1,app,,,,31/12/2030,,", "expireDate", "not a date"],
    ["a day that does not exist", "BAD-KEY-1,app,,,,2030-02-29,,", "expireDate", "not a date"],
    ["a month that does not exist", "BAD-KEY-1,app,,,,2030-13-01,,", "expireDate", "not a date"],
    ["an hour that does not exist", "BAD-KEY-1,app,,,,2030-12-31T24:00:00Z,,", "expireDate", "not a date"],
    ["an instant without its zone", "BAD-KEY-1,app,,,,2030-12-31T10:00:00,,", "expireDate", "not a date"],
    ["words", "BAD-KEY-1,app,,,,next year,,", "expireDate", "not a date"],
    ["a year before 1970", "BAD-KEY-1,app,,,,1969-12-31,,", "expireDate", "absurd date"],
    ["an instant in 1969 in UTC", "BAD-KEY-1,app,,,,1970-01-01T00:30:00+01:00,,", "expireDate", "absurd date"],
    ["the year 0", "BAD-KEY-1,app,,,,0000-01-01,,", "expireDate", "absurd date"],
    ["a year after 9999", "BAD-KEY-1,app,,,,10000-01-01,,", "expireDate", "absurd date"],
    ["an instant in 10000 in UTC", "BAD-KEY-1,app,,,,9999-12-31T23:00:00-05:00,,", "expireDate", "absurd date"],
    ["a year past what a Date holds", "BAD-KEY-1,app,,,,999999999-01-01,,", "expireDate", "absurd date"],
    ["negative maxActivations", "BAD-KEY-1,app,,,,,-1,", "maxActivations", "not a number of activations"],
    ["fractional maxActivations", "BAD-KEY-1,app,,,,,2.5,", "maxActivations", "not a number of activations"],
    ["words for maxActivations", "BAD-KEY-1,app,,,,,three,", "maxActivations", "not a number of activations"],
    ["maxActivations past 32 bits", "BAD-KEY-1,app,,,,,2147483648,", "maxActivations", "not a number of activations"],
    ["a machine id with a space", "BAD-KEY-1,app,,,,,,ok;has space", "machines", '"has space"'],
    ["a machine id of 129 characters", `BAD-KEY-1,app,,,,,,${"m".repeat(129)}`, "machines", "1 to 128"],
    ["a machine id out of ASCII", "BAD-KEY-1,app,,,,,,ok;café", "machines", '"café"'],
    ["too few cells", "BAD-KEY-1,app", "row", "2 cells, the header 8"],
    ["too many cells", "BAD-KEY-1,app,,,,,,,extra", "row", "9 cells, the header 8"],
  ])("%s", (_, record, field, message) => {
    const read = readCsv([HEADER, good(1), record, good(2)].join("\r\n"));
    expect(read.errors).toEqual([{ row: 3, field, message: expect.stringContaining(message) }]);
    expect(read.rows).toStrictEqual([goodRow(1, 2), goodRow(2, 4)]);
  });

  it("reports each field of a record with several problems", () => {
    const read = readCsv([HEADER, good(1), "short,,bad,,,yesterday,-1,a b", good(2)].join("\n"));
    expect(read.errors.map((e) => [e.row, e.field])).toEqual([
      [3, "legacyKey"],
      [3, "product"],
      [3, "customerEmail"],
      [3, "expireDate"],
      [3, "maxActivations"],
      [3, "machines"],
    ]);
    expect(read.rows).toStrictEqual([goodRow(1, 2), goodRow(2, 4)]);
  });

  it("reports a key seen before on the later line, counting the lines of quoted line breaks", () => {
    const text = [HEADER, good(1), 'GOOD-KEY-2,app,,"Jo\nDoe",,,,', " GOOD-KEY-1 ,app,,,,,,", good(2), good(3)].join(
      "\n",
    );
    const read = readCsv(text);
    expect(read.errors).toEqual([
      { row: 5, field: "legacyKey", message: "The key is a duplicate of line 2" },
      { row: 6, field: "legacyKey", message: "The key is a duplicate of line 3" },
    ]);
    expect(read.rows.map((r) => [r.row, r.legacyKey])).toEqual([
      [2, "GOOD-KEY-1"],
      [3, "GOOD-KEY-2"],
      [7, "GOOD-KEY-3"],
    ]);
  });

  it("reports a key repeated after a record with another problem", () => {
    const read = readCsv([HEADER, "GOOD-KEY-1,,,,,,,", good(1)].join("\n"));
    expect(read.errors).toEqual([
      { row: 2, field: "product", message: "A product code is required" },
      { row: 3, field: "legacyKey", message: "The key is a duplicate of line 2" },
    ]);
    expect(read.rows).toEqual([]);
  });

  it.each([
    ["unterminated", '"BAD-KEY-1,app,,,,,,', "Quoted field unterminated"],
    ["closed too early", '"BAD-KEY"-1,app,,,,,,', "Trailing quote on quoted field is malformed"],
  ])("reports a quoted field %s on its line, the lines before it read, those it takes in named", (_, bad, why) => {
    const read = readCsv([HEADER, good(1), good(2), bad, good(3), good(4)].join("\n"));
    expect(read.errors).toEqual([
      {
        row: 4,
        field: "row",
        message: `The line's quoting is malformed (${why}): it is not read, nor lines 5 to 6 that its open quote takes in`,
      },
    ]);
    expect(read.rows).toStrictEqual([goodRow(1, 2), goodRow(2, 3)]);
  });

  it("reports an unterminated quoted field on the last line", () => {
    const read = readCsv([HEADER, good(1), '"BAD-KEY-1,app,,,,,,'].join("\n"));
    expect(read.errors).toEqual([
      { row: 3, field: "row", message: "The line's quoting is malformed (Quoted field unterminated): it is not read" },
    ]);
    expect(read.rows).toStrictEqual([goodRow(1, 2)]);
  });
});

describe("readCsv: a file it cannot read is a problem of row 0, without rows", () => {
  it.each([
    ["an empty text", "", "file", "empty"],
    ["a BOM and blank lines", "\uFEFF\r\n  \r\n", "file", "empty"],
    ["a blank first line", `\n${HEADER}\n${good(1)}`, "header", "no header row"],
    ["a header without legacyKey", `product,customerEmail\napp,a@example.com`, "header", "no column legacyKey;"],
    ["a header without product", `legacyKey,notes\n${good(1)}`, "header", "no column product;"],
    ["a header with neither", "key,prod\nGOOD-KEY-1,app", "header", "no column legacyKey and product;"],
    ["a data line for a header", `${good(1)}\n${good(2)}`, "header", "no column legacyKey and product;"],
    [
      "a column named twice",
      `${HEADER},LegacyKey\n${good(1)},x`,
      "header",
      "names the column legacyKey more than once",
    ],
    ["an unterminated quote in the header", `"legacyKey,product\n${good(1)}`, "header", "cannot be read"],
  ])("%s", (_, text, field, message) => {
    expect(readCsv(text)).toEqual({
      rows: [],
      errors: [{ row: 0, field, message: expect.stringContaining(message) }],
      unsupported: [],
    });
  });

  it("lists the columns it does not read once, the rows read all the same", () => {
    const read = readCsv(`legacyKey,price,product,,notes\nGOOD-KEY-1,9.99,app,,x\nGOOD-KEY-2,1,app,,y`);
    expect(read.unsupported).toEqual(['CSV columns not imported: "price", "(column 4, unnamed)", "notes"']);
    expect(read.errors).toEqual([]);
    expect(read.rows.map((r) => r.legacyKey)).toEqual(["GOOD-KEY-1", "GOOD-KEY-2"]);
  });
});
