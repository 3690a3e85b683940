// electron-builder loads `electron-publisher-<provider>.js` from the build resources folder for a custom provider.
module.exports = require("@licensing/publish/electron-builder");
