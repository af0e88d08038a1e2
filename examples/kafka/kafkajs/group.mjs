// Two kafkajs consumers in one group read a topic from examples/kafka: run by
// TestKafkajsGroup (group_test.go) as node group.mjs ADDR TOPIC GROUP COUNT.
// It prints "ready" once both members hold partitions, then one JSON line per
// record consumed, and leaves the group after COUNT records.
import { Kafka, logLevel } from 'kafkajs';

const [addr, topic, groupId, count] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'kafkajs-group', brokers: [addr], logLevel: logLevel.ERROR });
const members = [0, 1].map(() => kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10000 }));
const held = [0, 0];
let ready = false;
let consumed = 0;
let finish;
const finished = new Promise((resolve) => { finish = resolve; });

members.forEach((consumer, i) => {
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    held[i] = (payload.memberAssignment[topic] || []).length;
    if (!ready && held[0] > 0 && held[1] > 0) {
      ready = true;
      console.log('ready');
    }
  });
});

const timer = setTimeout(() => { console.error(`timed out: ${consumed} of ${count} records`); process.exit(2); }, 60000);
for (const [i, consumer] of members.entries()) {
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      console.log(JSON.stringify({ member: i, partition, offset: Number(message.offset), value: message.value.toString() }));
      if (++consumed >= Number(count)) finish();
    },
  });
}
await finished;
clearTimeout(timer);
await Promise.all(members.map((c) => c.disconnect()));
