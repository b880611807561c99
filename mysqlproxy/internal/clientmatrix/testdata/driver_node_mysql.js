// Runs the client matrix's cases with node's mysql (node-mysql).
// node mysql has no server-side prepared statements: prepared steps are
// interpolated by the driver. It has no reconnect option either; a
// connection that the server closes while idle emits an error event,
// which the transcript records on the next step of that connection.

'use strict';

const fs = require('fs');
const mysql = require('mysql');

function emit(obj) {
  const sorted = {};
  for (const k of Object.keys(obj).sort()) sorted[k] = obj[k];
  process.stdout.write(JSON.stringify(sorted) + '\n');
}

// text renders a column value: a string (hex when it is not UTF-8), the
// type and value of anything the driver converted, or null for NULL.
function text(v) {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) {
    const s = v.toString('utf8');
    return Buffer.from(s, 'utf8').equals(v) ? s : '0x' + v.toString('hex');
  }
  if (typeof v === 'string') return v;
  return typeof v + ':' + String(v);
}

function param(p) {
  if (p !== null && typeof p === 'object') {
    if ('int' in p) return p.int;
    if ('double' in p) return p.double;
  }
  return p;
}

function errorFields(e) {
  return { code: e.errno, state: e.sqlState, name: e.code, message: e.sqlMessage || e.message, fatal: !!e.fatal };
}

function column(f) {
  return { name: f.name, orgName: f.orgName, table: f.table, db: f.db, type: f.type, length: f.length,
    charsetNr: f.charsetNr, flags: f.flags, decimals: f.decimals };
}

function open(c, events) {
  const conn = mysql.createConnection({
    host: c.host, port: c.port, user: c.user, password: c.password, database: c.database,
    charset: 'UTF8MB4_GENERAL_CI', multipleStatements: true, dateStrings: true, flags: '+LOCAL_FILES',
  });
  conn.on('error', (e) => events.push(errorFields(e)));
  return new Promise((resolve, reject) => {
    conn.connect((err) => (err ? reject(err) : resolve(conn)));
  });
}

function run(conn, sql, values) {
  return new Promise((resolve) => {
    const out = { results: [] };
    if (values !== undefined) out.interpolated = true;
    // Rows come as objects keyed by column name, which loses repeated
    // names (SELECT ?, ?); typeCast sees every value in column order.
    let cells = [];
    const typeCast = (field, next) => {
      const v = next();
      cells.push(v);
      return v;
    };
    const q = conn.query({ sql, values, typeCast });
    q.on('fields', (fields, i) => {
      out.results[i] = { columns: fields.map(column), rows: [] };
    });
    q.on('result', (row, i) => {
      if (row && row.constructor && row.constructor.name === 'OkPacket') {
        out.results[i] = { affected: row.affectedRows, insert_id: row.insertId, warnings: row.warningCount };
      } else {
        out.results[i].rows.push(cells.map(text));
        cells = [];
      }
    });
    q.on('error', (e) => {
      out.error = errorFields(e);
    });
    q.on('end', () => {
      out.results = out.results.filter((r) => r !== undefined);
      resolve(out);
    });
  });
}

function ping(conn) {
  return new Promise((resolve) => conn.ping((err) => resolve(err ? { error: errorFields(err) } : { ping: 'ok' })));
}

async function main() {
  const conf = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  for (const kase of conf.cases) {
    emit({ case: kase.id, event: 'start' });
    const conns = {};
    const events = {};
    let mainID = '';
    for (let i = 0; i < kase.steps.length; i++) {
      const st = kase.steps[i];
      const name = st.conn || 'main';
      const out = { case: kase.id, step: i, conn: name };
      try {
        if ('sleep' in st) {
          await new Promise((r) => setTimeout(r, st.sleep * 1000));
          out.slept = st.sleep;
        } else {
          if (!conns[name]) {
            events[name] = [];
            conns[name] = await open(name === 'admin' ? conf.admin : conf.target, events[name]);
            if (name === 'main') mainID = String(conns[name].threadId);
          }
          const c = conns[name];
          if (events[name].length > 0) out.events = events[name].splice(0);
          if (st.ping) {
            Object.assign(out, await ping(c));
          } else if ('prepare' in st) {
            Object.assign(out, await run(c, st.prepare.replaceAll('{main_id}', mainID), (st.params || []).map(param)));
          } else {
            Object.assign(out, await run(c, st.sql.replaceAll('{main_id}', mainID)));
          }
        }
      } catch (e) {
        out.error = errorFields(e);
      }
      emit(out);
    }
    for (const c of Object.values(conns)) c.destroy();
    emit({ case: kase.id, event: 'end' });
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
