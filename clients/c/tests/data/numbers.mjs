// Writes tests/data/numbers.txt (run: node clients/c/tests/data/numbers.mjs clients/c/tests/data/numbers.txt): doubles
// (the hex of their 64 bits) and how ECMAScript writes them, which RFC 8785 (JCS) prescribes; the jcs-numbers test reads it.
import { writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
const out = [];
const buf = new DataView(new ArrayBuffer(8));
const add = (x) => {
  if (!Number.isFinite(x)) return;
  buf.setFloat64(0, x);
  out.push(`${buf.getBigUint64(0).toString(16).padStart(16, "0")} ${String(x)}`);
};
const special = [
  0,
  -0,
  1,
  -1,
  0.1,
  0.2,
  0.3,
  1 / 3,
  2 / 3,
  5e-324,
  2.2250738585072014e-308,
  2.225073858507201e-308,
  1.7976931348623157e308,
  9007199254740991,
  9007199254740992,
  1e21,
  1e20,
  999999999999999900000,
  1e-6,
  1e-7,
  0.000001234,
  123456789012345680000,
  4.35,
  0.30000000000000004,
  333333333.3333333,
  1e300,
  1.5e-300,
  100,
  1000000,
  123e-20,
  4.5,
  0.002,
  1e-27,
  1e30,
  -1.5,
  2 ** 53,
  2 ** 63,
  2 ** 64,
  2 ** -1074,
  2 ** -1022,
  2 ** 1023,
  9.5367431640625e-7,
  5e-7,
  1.1e21,
  1.2e-6,
];
special.forEach(add);
for (let e = -1074; e <= 1023; e++) add(2 ** e);
for (let e = -325; e <= 308; e += 3) {
  add(Number(`1e${e}`));
  add(Number(`9.999999999999999e${e}`));
  add(Number(`5e${e}`));
}
for (let i = 0; i < 800; i++) {
  const b = randomBytes(8);
  add(new DataView(b.buffer, b.byteOffset, 8).getFloat64(0));
}
for (let i = 0; i < 200; i++) add(Math.floor(Math.random() * 2 ** 53) * (Math.random() < 0.5 ? 1 : -1));
for (let i = 0; i < 200; i++) add(Number((Math.random() * 1000).toFixed(Math.floor(Math.random() * 8))));
for (let i = 0; i < 300; i++) add(Math.random() * 10 ** Math.floor(Math.random() * 40 - 20));
writeFileSync(process.argv[2], `${out.join("\n")}\n`);
console.log(out.length);
